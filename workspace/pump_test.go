package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// chunk is the Store's streaming unit (256 KiB); the sizes below sit on and
// around its multiples, where the pipeline changes shape.
const chunk = 256 << 10

var pipeSizes = []int{0, 1, chunk - 1, chunk, chunk + 1, 2*chunk + 3, 4 * chunk, 4*chunk + 1, 9*chunk + 12345}

// raggedReader returns reads of random lengths, including empty ones.
type raggedReader struct {
	data []byte
	r    *rand.Rand
}

func (r *raggedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data), r.r.IntN(3*chunk/2))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// countingObserver counts what it sees and hashes it.
type countingObserver struct{ buf bytes.Buffer }

func (o *countingObserver) Write(p []byte) (int, error) { return o.buf.Write(p) }

func TestPipelinedBodiesRoundTrip(t *testing.T) {
	skipUnlessLong(t)
	ctx := context.Background()
	for _, n := range pipeSizes {
		data := bodyOf(byte(n), n)
		want := artifact.RefOf(data)
		forms := map[string]func(s *workspace.Store, obs io.Writer) (*workspace.Pending, error){
			"Ingest": func(s *workspace.Store, obs io.Writer) (*workspace.Pending, error) {
				src := &raggedReader{data: data, r: rand.New(rand.NewPCG(uint64(n), 1))}
				p, got, err := s.Ingest(ctx, src, &workspace.IngestOptions{Observer: obs})
				if err == nil && got != int64(n) {
					t.Errorf("Ingest of %d bytes read %d", n, got)
				}
				return p, err
			},
			"IngestBytes": func(s *workspace.Store, obs io.Writer) (*workspace.Pending, error) {
				return s.IngestBytes(ctx, data, &workspace.IngestOptions{Observer: obs})
			},
		}
		for name, ingest := range forms {
			s, in, _ := instrumented(nil)
			var obs countingObserver
			p, err := ingest(s, &obs)
			if err != nil {
				t.Fatalf("%s of %d bytes: %v", name, n, err)
			}
			if p.Ref() != want || p.Size() != int64(n) || !bytes.Equal(obs.buf.Bytes(), data) {
				t.Fatalf("%s of %d bytes: ref %v size %d, observer saw %d bytes", name, n, p.Ref(), p.Size(), obs.buf.Len())
			}
			if res, err := p.Commit(ctx); err != nil || res != workspace.Created {
				t.Fatalf("%s of %d bytes: Commit = %v, %v", name, n, res, err)
			}
			if c := in.Counts(); c.BytesWritten != int64(n) {
				t.Fatalf("%s of %d bytes wrote %d", name, n, c.BytesWritten)
			}
			got, err := s.ReadVerified(ctx, want, int64(n), 0, int64(n))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s of %d bytes: ReadVerified: %v", name, n, err)
			}
			if n > 0 {
				// A range straddling a chunk boundary.
				off, k := int64(n/2), int64(min(n-n/2, chunk+2))
				var out bytes.Buffer
				if w, err := s.CopyVerified(ctx, want, int64(n), off, k, &out); err != nil || w != k || !bytes.Equal(out.Bytes(), data[off:off+k]) {
					t.Fatalf("%s of %d bytes: CopyVerified: %d, %v", name, n, w, err)
				}
			}
		}
	}
}

func TestPipelinedCorruptionIsCaught(t *testing.T) {
	ctx := context.Background()
	data := bodyOf(9, 5*chunk+17)
	for _, at := range []int{0, chunk - 1, chunk, 3*chunk + 5, len(data) - 1} {
		s, _, m := instrumented(nil)
		ref := mustPut(t, s, data)
		bad := bytes.Clone(data)
		bad[at] ^= 1
		drivertest.Overwrite(m, ref.Hex(), bad)
		if b, err := s.ReadVerified(ctx, ref, int64(len(data)), 0, 10); b != nil || !errors.Is(err, workspace.ErrCorrupt) {
			t.Errorf("flip at %d: ReadVerified = %d bytes, %v", at, len(b), err)
		}
		if err := s.VerifyBody(ctx, ref, -1); !errors.Is(err, workspace.ErrCorrupt) {
			t.Errorf("flip at %d: VerifyBody = %v", at, err)
		}
	}
}

func TestPipelinedWriteFailure(t *testing.T) {
	skipUnlessLong(t)
	ctx := context.Background()
	for _, failAt := range []int64{1, 2, 5, 7} {
		var writes atomic.Int64
		h := &drivertest.Hooks{Write: func([]byte) error {
			if writes.Add(1) == failAt {
				return errInjected
			}
			return nil
		}}
		data := bodyOf(3, 8*chunk)
		for name, ingest := range map[string]func(s *workspace.Store) error{
			"Ingest": func(s *workspace.Store) error {
				_, _, err := s.Ingest(ctx, bytes.NewReader(data), nil)
				return err
			},
			"IngestBytes": func(s *workspace.Store) error {
				return commitBytes(ctx, s, data)
			},
		} {
			writes.Store(0)
			s, in, _ := instrumented(h)
			err := ingest(s)
			if !errors.Is(err, errInjected) || asError(t, err).Op != "put" {
				t.Fatalf("%s, write %d failing: %v", name, failAt, err)
			}
			if c := in.Counts(); c.Aborts != 1 || c.Commits != 0 || c.Writes != failAt {
				t.Fatalf("%s, write %d failing: %+v; want the writer aborted right after the failure", name, failAt, c)
			}
		}
	}
}

func TestPipelinedReadFailure(t *testing.T) {
	s, in, _ := instrumented(nil)
	const n = 3*chunk + 100
	p, got, err := s.Ingest(context.Background(), &failingReader{n: n, err: errInjected}, nil)
	if err != errInjected || p != nil || got != n {
		t.Fatalf("Ingest failing after %d bytes = %v, %d, %v", n, p, got, err)
	}
	if c := in.Counts(); c.Aborts != 1 || c.Commits != 0 {
		t.Fatalf("after a failing source: %+v", c)
	}
}

// cancelAfter cancels its context once n bytes were read from it.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	if c.n -= k; c.n <= 0 {
		c.cancel()
	}
	return k, err
}

func TestPipelinedCancel(t *testing.T) {
	data := bodyOf(4, 10*chunk)
	s, in, _ := instrumented(nil)
	ctx, cancel := context.WithCancel(context.Background())
	_, got, err := s.Ingest(ctx, &cancelAfter{r: bytes.NewReader(data), n: 2 * chunk, cancel: cancel}, nil)
	if !errors.Is(err, context.Canceled) || got >= int64(len(data)) {
		t.Fatalf("Ingest cancelled midway = %d bytes, %v", got, err)
	}
	if c := in.Counts(); c.Aborts != 1 {
		t.Fatalf("cancelled Ingest: %+v", c)
	}
	// IngestBytes writes when committed, checking between chunks too.
	hook := &drivertest.Hooks{}
	s2, _, _ := instrumented(hook)
	for name, ingest := range map[string]func(ctx context.Context) error{
		"IngestBytes": func(ctx context.Context) error {
			return commitBytes(ctx, s2, data)
		},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		var writes atomic.Int64
		hook.Write = func([]byte) error {
			if writes.Add(1) == 2 {
				cancel()
			}
			return nil
		}
		if err := ingest(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s cancelled midway: %v", name, err)
		}
		if writes.Load() >= 10 {
			t.Fatalf("%s went on writing after the cancellation: %d writes", name, writes.Load())
		}
	}
}

func TestMaxBytesReadsAtMostOneMore(t *testing.T) {
	for _, max := range []int64{10, chunk - 1, chunk, 3*chunk + 1} {
		s, in, _ := instrumented(nil)
		src := &countingSource{r: bytes.NewReader(bodyOf(1, 5*chunk))}
		_, _, err := s.Ingest(context.Background(), src, &workspace.IngestOptions{MaxBytes: max})
		if !errors.Is(err, workspace.ErrTooLarge) {
			t.Fatalf("MaxBytes %d: %v", max, err)
		}
		if src.n != max+1 {
			t.Fatalf("MaxBytes %d: read %d bytes, want %d", max, src.n, max+1)
		}
		if c := in.Counts(); c.Aborts != 1 || c.Commits != 0 {
			t.Fatalf("MaxBytes %d: %+v", max, c)
		}
		if _, err := s.IngestBytes(context.Background(), bodyOf(1, int(max)+1), &workspace.IngestOptions{MaxBytes: max}); !errors.Is(err, workspace.ErrTooLarge) {
			t.Fatalf("IngestBytes over MaxBytes %d: %v", max, err)
		}
	}
}

type countingSource struct {
	r io.Reader
	n int64
}

func (c *countingSource) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// commitBytes stores data through IngestBytes and Commit.
func commitBytes(ctx context.Context, s *workspace.Store, data []byte) error {
	p, err := s.IngestBytes(ctx, data, nil)
	if err != nil {
		return err
	}
	_, err = p.Commit(ctx)
	return err
}

func TestIngestBytesErrors(t *testing.T) {
	ctx := context.Background()
	s, in, _ := instrumented(nil)
	p, err := s.IngestBytes(ctx, []byte("abc"), nil)
	if err != nil || p.Ref() != artifact.RefOf([]byte("abc")) || p.Size() != 3 {
		t.Fatalf("IngestBytes = %v, %v", p, err)
	}
	p.Discard()
	if c := in.Counts(); c.NewWriters != 0 {
		t.Fatalf("IngestBytes then Discard touched the driver: %+v", c)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.IngestBytes(cctx, []byte("abc"), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("IngestBytes with a cancelled context: %v", err)
	}
	failing := &drivertest.Hooks{NewWriter: func(context.Context) error { return errInjected }}
	s2, _, _ := instrumented(failing)
	if err := commitBytes(ctx, s2, []byte("abc")); !errors.Is(err, errInjected) {
		t.Fatalf("IngestBytes when no writer can start: %v", err)
	}
	s.Close()
	if err := commitBytes(ctx, s, []byte("abc")); !errors.Is(err, workspace.ErrClosed) {
		t.Fatalf("IngestBytes on a closed store: %v", err)
	}
}

// seqBodies serves readers without ReadAt (forward reads only), keeping
// memstore's versions.
type seqBodies struct{ *memstore.Store }

func (b seqBodies) Open(ctx context.Context, key string) (driver.Reader, error) {
	r, err := b.Store.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return seqReader{r}, nil
}

type seqReader struct{ driver.Reader }

func (r seqReader) Read(p []byte) (int, error) { return r.Reader.Read(p) }

func TestCopyVerifiedVersionedServesWithoutRehash(t *testing.T) {
	ctx := context.Background()
	data := bodyOf(8, 3*chunk+5)
	size := int64(len(data))
	for name, wrap := range map[string]func(m *memstore.Store) driver.Bodies{
		"range":      func(m *memstore.Store) driver.Bodies { return m },
		"sequential": func(m *memstore.Store) driver.Bodies { return seqBodies{m} },
	} {
		m := memstore.New()
		s, in := over(wrap(m), m, nil)
		ref := mustPut(t, s, data)
		in.Reset()
		var out bytes.Buffer
		if n, err := s.CopyVerified(ctx, ref, size, chunk-3, chunk+10, &out); err != nil || n != chunk+10 || !bytes.Equal(out.Bytes(), data[chunk-3:2*chunk+7]) {
			t.Fatalf("%s: CopyVerified = %d, %v", name, n, err)
		}
		// One verifying pass, then at most the bytes up to the range's end.
		if c := in.Counts(); c.BytesRead > size+2*chunk+7 {
			t.Fatalf("%s: read %d bytes for a %d-byte body: hashed twice?", name, c.BytesRead, size)
		}
	}
}

func TestCopyVerifiedVersionedDetectsChangeDuringCopy(t *testing.T) {
	ctx := context.Background()
	data := bodyOf(2, 2*chunk)
	size := int64(len(data))
	m := memstore.New()
	ref := artifact.RefOf(data)
	var opens atomic.Int32
	var changed atomic.Bool
	// Replace the body right after the second open (the copy's), so the
	// copy reads the old bytes and the version check afterwards sees the
	// new one.
	h := &drivertest.Hooks{Stat: func(context.Context, string) error {
		if opens.Load() == 2 && !changed.Load() {
			changed.Store(true)
			drivertest.Overwrite(m, ref.Hex(), data)
		}
		return nil
	}, Open: func(context.Context, string) error { opens.Add(1); return nil }}
	s, _ := over(m, m, h)
	mustPut(t, s, data)
	opens.Store(0)
	n, err := s.CopyVerified(ctx, ref, size, 0, size, io.Discard)
	if !errors.Is(err, workspace.ErrChanged) || n != size {
		t.Fatalf("CopyVerified of a body replaced during the copy = %d, %v; want all bytes, then ErrChanged", n, err)
	}
	// A body cut short after it was opened for the copy.
	short := &shortBodies{Store: m, cut: 100}
	s2, _ := over(short, m, nil)
	short.after = 1
	if _, err := s2.CopyVerified(ctx, ref, size, 0, size, io.Discard); !errors.Is(err, workspace.ErrChanged) {
		t.Fatalf("CopyVerified of a body that came back short: %v", err)
	}
}

// shortBodies serve the body whole on the first `after` opens, then only
// its first cut bytes while still reporting the full size.
type shortBodies struct {
	*memstore.Store
	cut   int64
	after int32
	opens atomic.Int32
}

func (b *shortBodies) Open(ctx context.Context, key string) (driver.Reader, error) {
	r, err := b.Store.Open(ctx, key)
	if err != nil || b.opens.Add(1) <= b.after {
		return r, err
	}
	return cutReader{Reader: r, r: io.LimitReader(r, b.cut)}, nil
}

type cutReader struct {
	driver.Reader
	r io.Reader
}

func (c cutReader) Read(p []byte) (int, error) { return c.r.Read(p) }
