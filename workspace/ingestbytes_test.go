package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// aheadBodies is a memstore (so a driver.Comparer: bodies in memory) that
// counts its writers, the bytes written to them and adopted by them, their
// aborts and commits; it can refuse a writer, fail Adopt, or hide it.
type aheadBodies struct {
	*memstore.Store
	writers, adopts, aborts, commits atomic.Int32
	written                          atomic.Int64
	failWriter, failAdopt, noAdopt   bool
}

func (a *aheadBodies) NewWriter(ctx context.Context) (driver.Writer, error) {
	a.writers.Add(1)
	if a.failWriter {
		return nil, errInjected
	}
	w, err := a.Store.NewWriter(ctx)
	if err != nil {
		return nil, err
	}
	aw := &aheadWriter{Writer: w, a: a}
	if a.noAdopt {
		return struct{ driver.Writer }{aw}, nil
	}
	return aw, nil
}

type aheadWriter struct {
	driver.Writer
	a *aheadBodies
}

func (w *aheadWriter) Write(p []byte) (int, error) {
	w.a.written.Add(int64(len(p)))
	return w.Writer.Write(p)
}

func (w *aheadWriter) Adopt(b []byte) error {
	w.a.adopts.Add(1)
	if w.a.failAdopt {
		return errInjected
	}
	return w.Writer.(driver.Adopter).Adopt(b)
}

func (w *aheadWriter) Abort() error {
	w.a.aborts.Add(1)
	return w.Writer.Abort()
}

func (w *aheadWriter) Commit(ctx context.Context, key string, replace bool) error {
	err := w.Writer.Commit(ctx, key, replace)
	if err == nil {
		w.a.commits.Add(1)
	}
	return err
}

func newAhead() (*workspace.Store, *aheadBodies) {
	a := &aheadBodies{Store: memstore.New()}
	return workspace.New(a, a.Store), a
}

var aheadAt = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

func attachBytes(ctx context.Context, s *workspace.Store, owner artifact.Owner, b []byte) (workspace.AttachCase, error) {
	p, err := s.IngestBytes(ctx, b, nil)
	if err != nil {
		return 0, err
	}
	return s.Attach(ctx, p, artifact.Record{Owner: owner, Tool: "t", CallID: "c", CreatedAt: aheadAt, LastUsedAt: aheadAt})
}

// TestCopyAhead: on a backend that holds its bodies in memory, a body of a
// chunk or more is copied while it is hashed, and a new body's writer
// adopts that copy: nothing is written to it. A smaller one is written
// when committed. A body the workspace already holds drops the copy and
// opens no writer at all (docs/offload.md: no body write), and the stored body is the
// one it was.
func TestCopyAhead(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		n     int
		ahead bool
	}{
		{"one chunk", 256 << 10, true},
		{"4 MiB", 4 << 20, true},
		{"under a chunk", 256<<10 - 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, a := newAhead()
			data := bodyOf(50, tc.n)
			if c, err := attachBytes(ctx, s, ownerA, data); c != workspace.AttachCreated || err != nil {
				t.Fatalf("Attach = %v, %v", c, err)
			}
			wantAdopts, wantWritten := int32(0), int64(tc.n)
			if tc.ahead {
				wantAdopts, wantWritten = 1, 0
			}
			if w, ad, n, c := a.writers.Load(), a.adopts.Load(), a.written.Load(), a.commits.Load(); w != 1 || ad != wantAdopts || n != wantWritten || c != 1 {
				t.Fatalf("writers %d, adopts %d, bytes written %d, commits %d; want 1, %d, %d, 1", w, ad, n, c, wantAdopts, wantWritten)
			}
			if err := s.VerifyBody(ctx, artifact.RefOf(data), int64(len(data))); err != nil {
				t.Fatal(err)
			}
			// Again, for another owner and for the same: the body is there.
			for _, o := range []artifact.Owner{ownerB, ownerA} {
				c, err := attachBytes(ctx, s, o, bytes.Clone(data))
				if c != workspace.AttachCreated && c != workspace.AttachExisting || err != nil {
					t.Fatalf("second Attach = %v, %v", c, err)
				}
			}
			if w, c := a.writers.Load(), a.commits.Load(); w != 1 || c != 1 {
				t.Fatalf("after two reuses: writers %d, commits %d; want 1, 1", w, c)
			}
			if err := s.VerifyBody(ctx, artifact.RefOf(data), int64(len(data))); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCopyAheadWithoutAdopt: a memory backend whose writers do not adopt
// is written the body itself; the copy is dropped.
func TestCopyAheadWithoutAdopt(t *testing.T) {
	ctx := context.Background()
	s, a := newAhead()
	a.noAdopt = true
	data := bodyOf(53, 1<<20)
	if c, err := attachBytes(ctx, s, ownerA, data); c != workspace.AttachCreated || err != nil {
		t.Fatalf("Attach = %v, %v", c, err)
	}
	if ad, n := a.adopts.Load(), a.written.Load(); ad != 0 || n != int64(len(data)) {
		t.Fatalf("adopts %d, bytes written %d; want 0, %d", ad, n, len(data))
	}
	if err := s.VerifyBody(ctx, artifact.RefOf(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
}

// TestCopyAheadDiscardStopsReading: Discard returns only once the copy
// ahead no longer reads the body, so that the caller may change it at once
// (the race detector checks this test); nothing reaches the backend.
func TestCopyAheadDiscardStopsReading(t *testing.T) {
	ctx := context.Background()
	s, a := newAhead()
	data := bodyOf(51, 4<<20)
	for range 20 {
		p, err := s.IngestBytes(ctx, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.Discard()
		data[0]++
		data[len(data)-1]++
	}
	if w := a.writers.Load(); w != 0 {
		t.Fatalf("%d writers opened, want none", w)
	}
	for info, err := range s.ListBodies(ctx) {
		t.Fatalf("a body stored: %v, %v", info, err)
	}
}

// TestCopyAheadFailures: a body copied ahead fails as any other: a writer
// refused or an adoption that fails is a write failure with its cause; a
// context ended meanwhile is no decision; a closed workspace is ErrClosed.
// Nothing is committed.
func TestCopyAheadFailures(t *testing.T) {
	ctx := context.Background()
	data := bodyOf(52, 300_000)
	for _, tc := range []struct {
		name string
		set  func(*aheadBodies)
	}{
		{"writer refused", func(a *aheadBodies) { a.failWriter = true }},
		{"adoption fails", func(a *aheadBodies) { a.failAdopt = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, a := newAhead()
			tc.set(a)
			c, err := attachBytes(ctx, s, ownerA, data)
			if c != workspace.AttachWriteFailed || !errors.Is(err, errInjected) {
				t.Fatalf("Attach = %v, %v; want write failed, the injected error", c, err)
			}
			if c := a.commits.Load(); c != 0 {
				t.Fatalf("%d commits, want none", c)
			}
			if a.failAdopt && a.aborts.Load() != 1 {
				t.Fatalf("%d aborts, want 1", a.aborts.Load())
			}
		})
	}
	t.Run("context ended", func(t *testing.T) {
		s, a := newAhead()
		cctx, cancel := context.WithCancel(ctx)
		p, err := s.IngestBytes(cctx, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		c, err := s.Attach(cctx, p, artifact.Record{Owner: ownerA, Tool: "t", CallID: "c", CreatedAt: aheadAt, LastUsedAt: aheadAt})
		if c != 0 || !errors.Is(err, context.Canceled) {
			t.Fatalf("Attach = %v, %v; want no decision, canceled", c, err)
		}
		if a.commits.Load() != 0 {
			t.Fatalf("%d commits, want none", a.commits.Load())
		}
	})
	t.Run("copy cut short", func(t *testing.T) {
		// The copy's context ends before it starts (the observer, which
		// runs first, ends it): the commit, under a live context, writes
		// the body itself.
		s, a := newAhead()
		cctx, cancel := context.WithCancel(ctx)
		p, err := s.IngestBytes(cctx, data, &workspace.IngestOptions{Observer: cancelWriter(cancel)})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := p.Commit(ctx); res != workspace.Created || err != nil {
			t.Fatalf("Commit = %v, %v", res, err)
		}
		if ad, n := a.adopts.Load(), a.written.Load(); ad != 0 || n != int64(len(data)) {
			t.Fatalf("adopts %d, bytes written %d; want 0, %d", ad, n, len(data))
		}
		if err := s.VerifyBody(ctx, artifact.RefOf(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s, a := newAhead()
		p, err := s.IngestBytes(ctx, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Commit(ctx); !errors.Is(err, workspace.ErrClosed) {
			t.Fatalf("Commit on a closed workspace: %v, want ErrClosed", err)
		}
		if w := a.writers.Load(); w != 0 {
			t.Fatalf("%d writers opened, want none", w)
		}
	})
}

// cancelWriter is an observer that ends a context when it sees the body.
type cancelWriter context.CancelFunc

func (c cancelWriter) Write(p []byte) (int, error) {
	c()
	return len(p), nil
}
