package dirstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// Tamper kinds: what bit rot, a stray editor or an attacker with write
// access to the workspace can do to a body file.
const (
	bitFlip  = "bit flip"
	truncate = "truncate"
	extend   = "extend"
	swap     = "swap"
	symlink  = "symlink"
)

var tamperKinds = []string{bitFlip, truncate, extend, swap, symlink}

// tamperBody damages the body file of key in dir the given way; other is a
// second body, used by swap (its file is damaged too) and symlink (the
// target). It returns the keys whose bodies are now damaged.
func tamperBody(t testing.TB, dir, kind, key, other string, rng *rand.Rand) []string {
	t.Helper()
	path := filepath.Join(dir, "sha256", key)
	writable := func(p string) {
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	switch kind {
	case bitFlip, truncate, extend:
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		switch kind {
		case bitFlip:
			i := rng.IntN(len(b))
			b[i] ^= 1 << rng.IntN(8)
		case truncate:
			b = b[:rng.IntN(len(b))]
		case extend:
			extra := make([]byte, 1+rng.IntN(64))
			for i := range extra {
				extra[i] = byte(rng.Uint32())
			}
			b = append(b, extra...)
		}
		writable(path)
		if err := os.WriteFile(path, b, 0o400); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(path, 0o400)
		return []string{key}
	case swap:
		op := filepath.Join(dir, "sha256", other)
		tmp := path + ".swap"
		for _, r := range [][2]string{{path, tmp}, {op, path}, {tmp, op}} {
			if err := os.Rename(r[0], r[1]); err != nil {
				t.Fatal(err)
			}
		}
		return []string{key, other}
	case symlink:
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		// To a valid body inside the root: the link is never followed.
		if err := os.Symlink(other, path); err != nil {
			t.Fatal(err)
		}
		return []string{key}
	}
	t.Fatalf("unknown tamper kind %q", kind)
	return nil
}

// countingWriter counts the bytes released to it.
type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// TestTamperMatrix damages bodies in the five ways, 20 cases each, and
// reads every damaged body back in every form (whole, range, streamed): each
// read is stale (or refused) and releases zero bytes; VerifyBody reports
// each one corrupt; and offloading the same content again repairs it.
func TestTamperMatrix(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(scratchDir(t), "ws")
	ds := openAt(t, dir)
	// Records in memory: the matrix is about reading damaged body files.
	store := workspace.New(ds, memstore.New())
	b, _ := hybridctx.NewBinding(testOwner, store)
	off, _ := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 64}, nil)
	reh, _ := hybridctx.NewRehydrator(b, nil)
	rng := rand.New(rand.NewPCG(7, 11))
	const perKind = 20
	detected, total := 0, 0
	for _, kind := range tamperKinds {
		for c := range perKind {
			// Two fresh bodies of the same size (so a swap passes the
			// size check and only the digest catches it).
			size := 100 + rng.IntN(40_000)
			contents := make([][]byte, 2)
			refs := make([]artifact.Ref, 2)
			for i := range contents {
				contents[i] = []byte(fmt.Sprintf("%s %d %d ", kind, c, i) + string(bytes.Repeat([]byte{byte('a' + i)}, size)))
				contents[i] = contents[i][:size]
				out, err := off.Offload(ctx, hybridctx.Call{Tool: "t", ID: "c"}, contents[i])
				if err != nil || out.Outcome() != hybridctx.Offloaded {
					t.Fatalf("offload: %v %v", out, err)
				}
				refs[i] = out.Ref
			}
			damaged := tamperBody(t, dir, kind, refs[0].Hex(), refs[1].Hex(), rng)
			for i, ref := range refs {
				isDamaged := i == 0 || len(damaged) == 2
				total++
				ok := checkTampered(t, store, reh, ref, int64(size), isDamaged, kind)
				if ok && isDamaged {
					detected++
				}
			}
			// The next identical offload repairs every damaged body.
			for i := range damaged {
				out, err := off.Offload(ctx, hybridctx.Call{Tool: "t", ID: "again"}, contents[i])
				if err != nil || out.Reason() != hybridctx.ReplacedCorruptBody {
					t.Fatalf("%s: re-offload = %v, %v; want replaced_corrupt_body", kind, out.Reason(), err)
				}
				r, err := reh.Rehydrate(ctx, hybridctx.Request{Reference: refs[i].String(), Budget: 1 << 20})
				if err != nil || r.Outcome() != hybridctx.Resolved || !bytes.Equal(r.Segment.Bytes(), contents[i]) {
					t.Fatalf("%s: after repair %v %v", kind, r, err)
				}
			}
		}
	}
	cases := len(tamperKinds) * perKind
	t.Logf("%d tamper cases, %d damaged bodies detected by every read and by VerifyBody, %d reads in all", cases, detected, total)
}

// checkTampered reads ref in every form and checks the outcome: resolved to
// the right bytes when intact, stale (or refused) with nothing released when
// damaged. It reports whether every check passed.
func checkTampered(t *testing.T, store *workspace.Store, reh *hybridctx.Rehydrator, ref artifact.Ref, size int64, damaged bool, kind string) bool {
	t.Helper()
	ctx := context.Background()
	ok := true
	fail := func(format string, args ...any) {
		t.Helper()
		ok = false
		t.Errorf("%s: "+format, append([]any{kind}, args...)...)
	}
	for _, req := range []hybridctx.Request{
		{Reference: ref.String(), Budget: 1 << 20},
		{Reference: ref.String(), Budget: 1 << 20, Offset: size / 2, Length: 10},
		{Reference: ref.String(), Budget: 1 << 20, Offset: size, Length: 0},
	} {
		r, err := reh.Rehydrate(ctx, req)
		switch {
		case !damaged && (err != nil || r.Outcome() != hybridctx.Resolved):
			fail("intact body: %v %v", r, err)
		case damaged && err == nil && (r.Outcome() != hybridctx.Stale || r.Segment != nil):
			fail("damaged body read as %v", r.Outcome())
		}
		var w countingWriter
		r, err = reh.RehydrateTo(ctx, req, &w)
		switch {
		case !damaged && (err != nil || r.Outcome() != hybridctx.Resolved):
			fail("intact body streamed: %v %v", r, err)
		case damaged && (w.n != 0 || err == nil && r.Outcome() != hybridctx.Stale):
			fail("damaged body streamed as %v, %d bytes released", r.Outcome(), w.n)
		}
	}
	err := store.VerifyBody(ctx, ref, size)
	if damaged != errors.Is(err, workspace.ErrCorrupt) {
		fail("VerifyBody = %v", err)
	}
	if damaged != errors.Is(store.VerifyBody(ctx, ref, -1), workspace.ErrCorrupt) {
		fail("VerifyBody without a size = %v", err)
	}
	return ok
}
