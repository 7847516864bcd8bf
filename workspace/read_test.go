package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// flavour is a body driver over a memstore, reaching one CopyVerified path.
type flavour struct {
	name string
	wrap func(m *memstore.Store) driver.Bodies
}

var flavours = []flavour{
	// A range reader without Restat and versioned bodies: a second open,
	// compared by version.
	{"versioned", func(m *memstore.Store) driver.Bodies { return m }},
	// Range reader and Restat: one open, restated after the copy.
	{"restat", func(m *memstore.Store) driver.Bodies {
		return restatBodies{Store: m, restat: func(i driver.Info) driver.Info { return i }}
	}},
	// Neither, and no versions: a second open, hashed again while copying.
	{"plain", func(m *memstore.Store) driver.Bodies { return plainBodies{m} }},
}

func TestCopyVerifiedWritesNothingWhenCorrupt(t *testing.T) {
	ctx := context.Background()
	data := bodyOf(1, 600_000)
	size := int64(len(data))
	for _, f := range flavours {
		m := memstore.New()
		s, in := over(f.wrap(m), m, nil)
		ref := mustPut(t, s, data)
		for _, at := range []int{0, 300_000, len(data) - 1} {
			bad := bytes.Clone(data)
			bad[at] ^= 0x80
			drivertest.Overwrite(m, ref.Hex(), bad)
			var out bytes.Buffer
			n, err := s.CopyVerified(ctx, ref, size, 1000, 100, &out)
			if !errors.Is(err, workspace.ErrCorrupt) || n != 0 || out.Len() != 0 {
				t.Errorf("%s, flip at %d: CopyVerified = %d (%d written), %v; want 0, ErrCorrupt", f.name, at, n, out.Len(), err)
			}
		}
		in.Reset()
		drivertest.Overwrite(m, ref.Hex(), data)
		var out bytes.Buffer
		if n, err := s.CopyVerified(ctx, ref, size, 1000, 100, &out); err != nil || n != 100 || !bytes.Equal(out.Bytes(), data[1000:1100]) {
			t.Fatalf("%s: CopyVerified of the restored body = %d, %v", f.name, n, err)
		}
		wantOpens := int64(2)
		if f.name == "restat" {
			wantOpens = 1
		}
		if c := in.Counts(); c.Opens != wantOpens {
			t.Errorf("%s: CopyVerified opened the body %d times, want %d", f.name, c.Opens, wantOpens)
		}
	}
}

// changeOnSecondOpen returns hooks that replace the body of key with repl
// just before it is opened the second time.
func changeOnSecondOpen(m *memstore.Store, key string, repl []byte) *drivertest.Hooks {
	var opens atomic.Int32
	return &drivertest.Hooks{Open: func(_ context.Context, k string) error {
		if k == key && opens.Add(1) == 2 {
			drivertest.Overwrite(m, k, repl)
		}
		return nil
	}}
}

func TestCopyVerifiedDetectsChange(t *testing.T) {
	ctx := context.Background()
	data := bodyOf(2, 100_000)
	size := int64(len(data))
	ref := artifact.RefOf(data)
	other := bodyOf(3, len(data)) // same length, other bytes

	t.Run("versioned", func(t *testing.T) {
		m := memstore.New()
		s, _ := over(m, m, changeOnSecondOpen(m, ref.Hex(), other))
		mustPut(t, s, data)
		var out bytes.Buffer
		n, err := s.CopyVerified(ctx, ref, size, 0, size, &out)
		if !errors.Is(err, workspace.ErrChanged) || n != 0 || out.Len() != 0 {
			t.Fatalf("CopyVerified = %d (%d written), %v; want 0, ErrChanged", n, out.Len(), err)
		}
	})
	t.Run("restat", func(t *testing.T) {
		m := memstore.New()
		var changed atomic.Bool
		b := restatBodies{Store: m, restat: func(i driver.Info) driver.Info {
			if changed.Load() {
				i.Version += "+changed"
			}
			return i
		}}
		s, _ := over(b, m, nil)
		mustPut(t, s, data)
		var out bytes.Buffer
		if _, err := s.CopyVerified(ctx, ref, size, 5, 10, &out); err != nil || !bytes.Equal(out.Bytes(), data[5:15]) {
			t.Fatalf("CopyVerified of an unchanged body: %v", err)
		}
		changed.Store(true)
		if _, err := s.CopyVerified(ctx, ref, size, 5, 10, io.Discard); !errors.Is(err, workspace.ErrChanged) {
			t.Fatalf("CopyVerified of a body whose version changed: %v, want ErrChanged", err)
		}
	})
	t.Run("plain", func(t *testing.T) {
		m := memstore.New()
		s, _ := over(plainBodies{m}, m, changeOnSecondOpen(m, ref.Hex(), other))
		mustPut(t, s, data)
		_, err := s.CopyVerified(ctx, ref, size, 0, size, io.Discard)
		if !errors.Is(err, workspace.ErrChanged) {
			t.Fatalf("CopyVerified = %v; want ErrChanged", err)
		}
	})
}

func TestOverlongBodyReadsAtMostSizePlusOne(t *testing.T) {
	ctx := context.Background()
	data := bodyOf(4, 1<<20)
	const recorded = 1000
	m := memstore.New()
	mustPut(t, workspace.New(m, m), data)
	ref := artifact.RefOf(data)
	// The driver claims the recorded size while the stored body is longer.
	s, in := over(lyingBodies{Store: m, size: recorded}, m, nil)
	calls := map[string]func() error{
		"ReadVerified": func() error {
			b, err := s.ReadVerified(ctx, ref, recorded, 0, recorded)
			if b != nil {
				t.Errorf("ReadVerified released %d bytes", len(b))
			}
			return err
		},
		"VerifyBody":     func() error { return s.VerifyBody(ctx, ref, recorded) },
		"VerifyBody(-1)": func() error { return s.VerifyBody(ctx, ref, -1) },
		"CopyVerified": func() error {
			var out bytes.Buffer
			_, err := s.CopyVerified(ctx, ref, recorded, 0, recorded, &out)
			if out.Len() != 0 {
				t.Errorf("CopyVerified wrote %d bytes", out.Len())
			}
			return err
		},
	}
	for name, call := range calls {
		in.Reset()
		if err := call(); !errors.Is(err, workspace.ErrCorrupt) {
			t.Errorf("%s of an over-long body: %v, want ErrCorrupt", name, err)
		}
		if c := in.Counts(); c.BytesRead > recorded+1 || c.BytesRead == 0 {
			t.Errorf("%s of an over-long body read %d bytes, want 1..%d", name, c.BytesRead, recorded+1)
		}
	}
}

func TestReadVerifiedNeedsTheWholeBody(t *testing.T) {
	ctx := context.Background()
	s, in, m := instrumented(nil)
	data := bodyOf(5, 300_000)
	ref := mustPut(t, s, data)
	size := int64(len(data))
	in.Reset()
	// A one-byte range at the start still hashes the whole body once.
	if b, err := s.ReadVerified(ctx, ref, size, 0, 1); err != nil || b[0] != data[0] {
		t.Fatalf("ReadVerified: %v", err)
	}
	if c := in.Counts(); c.BytesRead != size || c.Opens != 1 {
		t.Fatalf("ReadVerified of a 1-byte range read %d bytes in %d opens, want %d in 1", c.BytesRead, c.Opens, size)
	}
	// A flip after the range is still caught, and nothing is returned.
	bad := bytes.Clone(data)
	bad[len(bad)-1] ^= 1
	drivertest.Overwrite(m, ref.Hex(), bad)
	if b, err := s.ReadVerified(ctx, ref, size, 0, 1); b != nil || !errors.Is(err, workspace.ErrCorrupt) {
		t.Fatalf("ReadVerified of a range before a flipped byte = %d bytes, %v", len(b), err)
	}
}
