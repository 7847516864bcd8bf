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

// countBodies is a memstore that counts its writers, the bytes written to
// them, their aborts and commits; it can refuse a writer.
type countBodies struct {
	*memstore.Store
	writers, aborts, commits atomic.Int32
	written                  atomic.Int64
	failWriter               bool
}

func (a *countBodies) NewWriter(ctx context.Context) (driver.Writer, error) {
	a.writers.Add(1)
	if a.failWriter {
		return nil, errInjected
	}
	w, err := a.Store.NewWriter(ctx)
	if err != nil {
		return nil, err
	}
	return &countWriter{Writer: w, a: a}, nil
}

type countWriter struct {
	driver.Writer
	a *countBodies
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.a.written.Add(int64(len(p)))
	return w.Writer.Write(p)
}

func (w *countWriter) Abort() error {
	w.a.aborts.Add(1)
	return w.Writer.Abort()
}

func (w *countWriter) Commit(ctx context.Context, key string, replace bool) error {
	err := w.Writer.Commit(ctx, key, replace)
	if err == nil {
		w.a.commits.Add(1)
	}
	return err
}

func newCounted() (*workspace.Store, *countBodies) {
	a := &countBodies{Store: memstore.New()}
	return workspace.New(a, a.Store), a
}

var bytesAt = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

func attachBytes(ctx context.Context, s *workspace.Store, owner artifact.Owner, b []byte, obs *workspace.IngestOptions) (workspace.AttachCase, error) {
	p, err := s.IngestBytes(ctx, b, obs)
	if err != nil {
		return 0, err
	}
	return s.Attach(ctx, p, artifact.Record{Owner: owner, Tool: "t", CallID: "c", CreatedAt: bytesAt, LastUsedAt: bytesAt})
}

// TestIngestBytesWritesOnlyNewBodies: a body in memory is written once,
// when a new body is committed, whatever its size and whether an observer
// saw it (which sees every byte once); a body the workspace already holds
// opens no writer at all (no body write), and the stored body is the one
// it was.
func TestIngestBytesWritesOnlyNewBodies(t *testing.T) {
	skipUnlessLong(t)
	ctx := context.Background()
	for _, n := range []int{0, 1000, 256 << 10, 4 << 20} {
		for _, observed := range []bool{false, true} {
			s, a := newCounted()
			data := bodyOf(50, n)
			var seen bytes.Buffer
			var opts *workspace.IngestOptions
			if observed {
				opts = &workspace.IngestOptions{Observer: &seen}
			}
			if c, err := attachBytes(ctx, s, ownerA, data, opts); c != workspace.AttachCreated || err != nil {
				t.Fatalf("%d bytes: Attach = %v, %v", n, c, err)
			}
			if observed && !bytes.Equal(seen.Bytes(), data) {
				t.Fatalf("%d bytes: the observer saw %d bytes", n, seen.Len())
			}
			if w, wr, c := a.writers.Load(), a.written.Load(), a.commits.Load(); w != 1 || wr != int64(n) || c != 1 {
				t.Fatalf("%d bytes: writers %d, bytes written %d, commits %d; want 1, %d, 1", n, w, wr, c, n)
			}
			// Again, for another owner and for the same: the body is there.
			for _, o := range []artifact.Owner{ownerB, ownerA} {
				seen.Reset()
				c, err := attachBytes(ctx, s, o, bytes.Clone(data), opts)
				if c != workspace.AttachCreated && c != workspace.AttachExisting || err != nil {
					t.Fatalf("%d bytes: second Attach = %v, %v", n, c, err)
				}
			}
			if w, c := a.writers.Load(), a.commits.Load(); w != 1 || c != 1 {
				t.Fatalf("%d bytes, after two reuses: writers %d, commits %d; want 1, 1", n, w, c)
			}
			if err := s.VerifyBody(ctx, artifact.RefOf(data), int64(len(data))); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestIngestBytesDiscard: a discarded body reaches nothing, and its bytes
// are the caller's again at once (the race detector checks this test).
func TestIngestBytesDiscard(t *testing.T) {
	ctx := context.Background()
	s, a := newCounted()
	data := bodyOf(51, 4<<20)
	for range 5 {
		p, err := s.IngestBytes(ctx, data, &workspace.IngestOptions{Observer: new(bytes.Buffer)})
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

// TestIngestBytesFailures: a body in memory fails as a streamed one: a
// writer refused is a write failure with its cause; a context ended
// meanwhile is no decision; a closed workspace is ErrClosed. Nothing is
// committed.
func TestIngestBytesFailures(t *testing.T) {
	ctx := context.Background()
	data := bodyOf(52, 300_000)
	t.Run("writer refused", func(t *testing.T) {
		s, a := newCounted()
		a.failWriter = true
		c, err := attachBytes(ctx, s, ownerA, data, nil)
		if c != workspace.AttachWriteFailed || !errors.Is(err, errInjected) {
			t.Fatalf("Attach = %v, %v; want write failed, the injected error", c, err)
		}
		if c := a.commits.Load(); c != 0 {
			t.Fatalf("%d commits, want none", c)
		}
	})
	t.Run("context ended", func(t *testing.T) {
		s, a := newCounted()
		cctx, cancel := context.WithCancel(ctx)
		p, err := s.IngestBytes(cctx, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		c, err := s.Attach(cctx, p, artifact.Record{Owner: ownerA, Tool: "t", CallID: "c", CreatedAt: bytesAt, LastUsedAt: bytesAt})
		if c != 0 || !errors.Is(err, context.Canceled) {
			t.Fatalf("Attach = %v, %v; want no decision, canceled", c, err)
		}
		if a.commits.Load() != 0 {
			t.Fatalf("%d commits, want none", a.commits.Load())
		}
	})
	t.Run("context ended while observed", func(t *testing.T) {
		// The observer ends the context: the body is hashed and observed
		// whole, and a commit under a live context writes it.
		s, a := newCounted()
		cctx, cancel := context.WithCancel(ctx)
		p, err := s.IngestBytes(cctx, data, &workspace.IngestOptions{Observer: cancelWriter(cancel)})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := p.Commit(ctx); res != workspace.Created || err != nil {
			t.Fatalf("Commit = %v, %v", res, err)
		}
		if n := a.written.Load(); n != int64(len(data)) {
			t.Fatalf("bytes written %d, want %d", n, len(data))
		}
		if err := s.VerifyBody(ctx, artifact.RefOf(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s, a := newCounted()
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
