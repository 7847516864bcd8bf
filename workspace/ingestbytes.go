package workspace

import (
	"context"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// IngestBytes is Ingest for a body already in memory: it hashes b now, and
// b reaches the backend only when Commit or Attach needs it, so that a body
// the workspace already holds costs no write. When opts has an observer
// (for example a classifier) it sees b once, on a goroutine of its own
// while b is hashed, so the two cost the time of the slower one.
//
// On a backend that holds its bodies in memory (a driver.Comparer), a body
// of copyAheadMin bytes or more is also copied on that goroutine, after
// the observer and beside the hash, and a backend whose writers adopt
// bytes (driver.Adopter) is then given that copy instead of copying b
// again: a copy into memory the process has not used before costs about
// half the hash's time in page faults, which a new body then does not wait
// for. A body the workspace already holds drops the copy unwritten.
//
// b is not copied otherwise: it must not change until the Pending is
// ended, which also waits for the copy to stop reading it.
func (s *Store) IngestBytes(ctx context.Context, b []byte, opts *IngestOptions) (*Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var o IngestOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes > 0 && int64(len(b)) > o.MaxBytes {
		return nil, wrap("put", artifact.Ref{}, ErrTooLarge)
	}
	p := &Pending{s: s, b: b, mem: b, size: int64(len(b))}
	ahead := s.comparer != nil && len(b) >= copyAheadMin
	if o.Observer == nil && !ahead {
		p.ref = artifact.RefOf(b)
		return p, nil
	}
	a := new(aside)
	if o.Observer != nil {
		a.observed = make(chan struct{})
	}
	if ahead {
		a.copied = make(chan struct{})
		p.aside = a
	}
	go a.run(ctx, b, o.Observer)
	// The new goroutine waits in this P's run-next slot, which the P that
	// newproc woke takes only once awake and spinning: tens of
	// microseconds on a virtual machine, the whole hash of a body under a
	// chunk, which the goroutine would then follow instead of running
	// beside it. Such a body yields, so that the goroutine runs here now
	// and this one moves to the woken P. A longer hash leaves time for the
	// steal, and keeping its core is then cheaper (measured: −20% at
	// 128 KiB of JSON with the yield, +7 to +14% from 256 KiB).
	if len(b) < chunkSize {
		runtime.Gosched()
	}
	t0 := time.Now()
	p.ref = artifact.RefOf(b)
	if a.observed != nil {
		a.await(time.Since(t0))
	}
	return p, nil
}

// copyAheadMin is the smallest body IngestBytes copies beside its hash for
// a backend that holds its bodies in memory: one chunk, from which the
// observer has a goroutine of its own already. Measured with
// BenchmarkFloor, 1 MiB: a new body −11 to −12% when the copy lands in
// memory the runtime reuses, −16 to −43% when the workspace grows into new
// memory, as it does when it keeps its bodies (-floorkeep); a reused body,
// whose copy is dropped, +2 to +3%. Below a chunk the goroutine would
// exist for the copy alone: at 64 and 128 KiB a new body in new memory
// took 25 to 30% less, but a reused one 14 to 26% more. The dropped copy
// is also memory: a reuse holds its body twice until the collector runs.
const copyAheadMin = chunkSize

// copyPiece is how much of the body the copy ahead copies between two
// looks at whether it is still needed.
const copyPiece = 64 << 10

// aside is what IngestBytes runs beside the hash of a body in memory: the
// observer, then the copy ahead.
type aside struct {
	observed chan struct{} // closed once the observer has seen the body; nil without one
	copied   chan struct{} // closed once the copy ahead ended; nil without one
	stop     atomic.Bool   // the copy is not needed: stop at the next piece
	buf      []byte        // the copy, once whole; nil if it stopped
}

func (a *aside) run(ctx context.Context, b []byte, obs io.Writer) {
	if obs != nil {
		_, _ = obs.Write(b)
		close(a.observed)
	}
	if a.copied == nil {
		return
	}
	defer close(a.copied)
	if obs != nil {
		// A caller that waited for the observer was readied into this P's
		// run-next slot: let it run now, not after the copy.
		runtime.Gosched()
	}
	buf := make([]byte, len(b))
	for off := 0; off < len(b); off += copyPiece {
		if a.stop.Load() || ctx.Err() != nil {
			return
		}
		copy(buf[off:], b[off:min(off+copyPiece, len(b))])
	}
	a.buf = buf
}

// await waits for the observer. An observer still running after the hash
// (dense JSON scans slower than SHA-256) is waited for first by yielding,
// for at most as long as the hash took, and only then by blocking: a
// caller that blocks runs again only several microseconds after the
// observer has ended, on a virtual machine, once woken and rescheduled.
func (a *aside) await(hash time.Duration) {
	for start := time.Now(); time.Since(start) < hash; {
		select {
		case <-a.observed:
			return
		default:
			runtime.Gosched()
		}
	}
	<-a.observed
}

// take waits for the copy ahead and returns it, nil if it stopped.
func (a *aside) take() []byte {
	<-a.copied
	buf := a.buf
	a.buf = nil
	return buf
}

// drop ends the copy ahead unused. It returns once the copy no longer
// reads the body.
func (a *aside) drop() {
	a.stop.Store(true)
	a.take()
}

// grower is a driver writer that can reserve room for the bytes to come,
// as a memory backend does (bytes.Buffer.Grow): a body known in advance
// and written in several chunks is then one block instead of several.
type grower interface{ Grow(n int) }

// write puts bytes held in memory into a new driver writer: the copy made
// ahead when the writer adopts it, else the bytes themselves. It does
// nothing for a body already written.
func (p *Pending) write(ctx context.Context) error {
	if p.w != nil {
		return nil
	}
	if p.s.closed.Load() {
		return wrap("put", p.ref, ErrClosed)
	}
	w, err := p.s.bodies.NewWriter(ctx)
	if err != nil {
		return wrap("put", artifact.Ref{}, err)
	}
	var buf []byte
	if a := p.aside; a != nil {
		p.aside = nil
		buf = a.take() // nil if it stopped: its context ended
	}
	if ad, ok := w.(driver.Adopter); ok && buf != nil {
		err = ad.Adopt(buf)
	} else {
		err = writeBody(ctx, w, p.b)
	}
	if err != nil {
		_ = w.Abort()
		return wrap("put", artifact.Ref{}, err)
	}
	p.w, p.b = w, nil
	return nil
}

// writeBody writes b to w in chunks, with ctx checked between them. A body
// of one chunk is one Write, which a memory backend copies into memory it
// need not clear first; only a longer one has room reserved.
func writeBody(ctx context.Context, w driver.Writer, b []byte) error {
	if g, ok := w.(grower); ok && len(b) > chunkSize {
		g.Grow(len(b))
	}
	for len(b) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(len(b), chunkSize)
		if _, err := w.Write(b[:k]); err != nil {
			return err
		}
		b = b[k:]
	}
	return nil
}
