package workspace_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// flipBit returns a copy of data with the low bit of byte i flipped.
func flipBit(data []byte, i int) []byte {
	c := bytes.Clone(data)
	c[i] ^= 0x01
	return c
}

// TestReuseComparesInsteadOfHashing: attaching bytes the workspace already
// holds verifies the stored body by comparing it with them (they already
// hash to the digest), so a reuse reads the body once and hashes none of
// it; a body passed as a stream is not kept, and its stored twin is
// hashed again.
func TestReuseComparesInsteadOfHashing(t *testing.T) {
	ctx := context.Background()
	data := bodyOf(41, 3<<20)
	s, in, _ := instrumented(nil)
	if c, err := attachOf(ctx, s, ownerA, data); c != workspace.AttachCreated || err != nil {
		t.Fatalf("first Attach = %v, %v", c, err)
	}
	for _, owner := range []string{"same owner", "new owner"} {
		in.Reset()
		before := s.VerifyHashedBytes()
		o := ownerA
		if owner == "new owner" {
			o = ownerB
		}
		c, err := attachOf(ctx, s, o, data)
		if err != nil || (c != workspace.AttachExisting && c != workspace.AttachCreated) {
			t.Fatalf("%s: Attach = %v, %v", owner, c, err)
		}
		if h := s.VerifyHashedBytes() - before; h != 0 {
			t.Errorf("%s: reuse hashed %d stored bytes, want 0", owner, h)
		}
		if n := in.Counts(); n.BytesRead != int64(len(data)) || n.NewWriters != 0 {
			t.Errorf("%s: reuse read %d bytes and opened %d writers; want %d and 0", owner, n.BytesRead, n.NewWriters, len(data))
		}
	}
	// The streamed form cannot keep its bytes in memory: the stored body
	// is hashed again, read once.
	before := s.VerifyHashedBytes()
	in.Reset()
	at := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	if c, err := drivertest.AttachData(ctx, s, ownerA, data, true, at); c != workspace.AttachExisting || err != nil {
		t.Fatalf("streamed Attach = %v, %v", c, err)
	}
	if h := s.VerifyHashedBytes() - before; h != int64(len(data)) {
		t.Errorf("streamed reuse hashed %d stored bytes, want %d", h, len(data))
	}
	if n := in.Counts(); n.BytesRead != int64(len(data)) {
		t.Errorf("streamed reuse read %d bytes, want %d", n.BytesRead, len(data))
	}
}

// TestStreamedSameSizeCorruptionIsReplaced: a streamed reuse hashes the
// stored body again, so a stored body of the right size that differs in
// one bit, anywhere, is found corrupt and replaced; so is
// one a byte short or long, through the instrumented driver and on
// memstore itself.
func TestStreamedSameSizeCorruptionIsReplaced(t *testing.T) {
	bothWays(t, streamedCorruption)
}

// bothWays runs check on a Store over the instrumented driver and on one
// over memstore itself.
func bothWays(t *testing.T, check func(*testing.T, *workspace.Store, *memstore.Store)) {
	t.Run("instrumented", func(t *testing.T) {
		s, _, m := instrumented(nil)
		check(t, s, m)
	})
	t.Run("memstore", func(t *testing.T) {
		m := memstore.New()
		check(t, workspace.New(m, m), m)
	})
}

func streamedCorruption(t *testing.T, s *workspace.Store, m *memstore.Store) {
	ctx := context.Background()
	data := bodyOf(44, 600_000) // several chunks
	at := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	if c, err := drivertest.AttachData(ctx, s, ownerA, data, true, at); c != workspace.AttachCreated || err != nil {
		t.Fatalf("first Attach = %v, %v", c, err)
	}
	ref := artifact.RefOf(data)
	damaged := map[string][]byte{"one short": data[:len(data)-1], "one longer": append(bytes.Clone(data), 'x')}
	for _, at := range []int{0, 262_143, 262_144, 300_001, len(data) - 1} {
		damaged[fmt.Sprintf("bit %d", at)] = flipBit(data, at)
	}
	for name, bad := range damaged {
		drivertest.Overwrite(m, ref.Hex(), bad)
		if c, err := drivertest.AttachData(ctx, s, ownerA, data, true, time.Now()); c != workspace.AttachReplaced || err != nil {
			t.Errorf("%s: Attach = %v, %v; want replaced", name, c, err)
		}
		if err := s.VerifyBody(ctx, ref, int64(len(data))); err != nil {
			t.Errorf("%s: body after the repair: %v", name, err)
		}
	}
	if c, err := drivertest.AttachData(ctx, s, ownerA, data, true, time.Now()); c != workspace.AttachExisting || err != nil {
		t.Errorf("intact body: Attach = %v, %v; want existing", c, err)
	}
}

// TestSameSizeCorruptionIsReplaced: a stored body of the right size that
// differs from the incoming bytes in a single bit, anywhere, is found
// corrupt by the comparison and replaced; so is one a byte short or long.
// Checked through the instrumented driver and on memstore itself.
func TestSameSizeCorruptionIsReplaced(t *testing.T) {
	bothWays(t, sameSizeCorruption)
}

func sameSizeCorruption(t *testing.T, s *workspace.Store, m *memstore.Store) {
	ctx := context.Background()
	data := bodyOf(42, 600_000) // several chunks
	if c, err := attachOf(ctx, s, ownerA, data); c != workspace.AttachCreated || err != nil {
		t.Fatalf("first Attach = %v, %v", c, err)
	}
	ref := artifact.RefOf(data)
	damaged := map[string][]byte{
		"first byte":  flipBit(data, 0),
		"mid chunk":   flipBit(data, 300_001),
		"last byte":   flipBit(data, len(data)-1),
		"one short":   data[:len(data)-1],
		"one longer":  append(bytes.Clone(data), 'x'),
		"all zeros":   make([]byte, len(data)),
		"second body": bodyOf(43, len(data)),
	}
	for name, bad := range damaged {
		if !drivertest.Overwrite(m, ref.Hex(), bad) {
			t.Fatalf("%s: Tamper failed", name)
		}
		if c, err := attachOf(ctx, s, ownerA, data); c != workspace.AttachReplaced || err != nil {
			t.Errorf("%s: Attach = %v, %v; want replaced", name, c, err)
		}
		if err := s.VerifyBody(ctx, ref, int64(len(data))); err != nil {
			t.Errorf("%s: body after the repair: %v", name, err)
		}
		// A new owner repairs it too, without learning it was there.
		drivertest.Overwrite(m, ref.Hex(), bad)
		newOwner := artifact.Owner{User: "n", Workflow: "wf", Session: name}
		if c, err := attachOf(ctx, s, newOwner, data); c != workspace.AttachCreated || err != nil {
			t.Errorf("%s, new owner: Attach = %v, %v; want created", name, c, err)
		}
		if err := s.VerifyBody(ctx, ref, int64(len(data))); err != nil {
			t.Errorf("%s, new owner: body after the repair: %v", name, err)
		}
	}
	// A body that verifies is reused, not replaced, and never hashed.
	before := s.VerifyHashedBytes()
	if c, err := attachOf(ctx, s, ownerA, data); c != workspace.AttachExisting || err != nil {
		t.Errorf("intact body: Attach = %v, %v; want existing", c, err)
	}
	if h := s.VerifyHashedBytes() - before; h != 0 {
		t.Errorf("intact body: the reuse hashed %d stored bytes, want 0", h)
	}
}
