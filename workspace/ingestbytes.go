package workspace

import (
	"context"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// IngestBytes is Ingest for a body already in memory: it hashes b now, and
// b reaches the backend only when Commit or Attach needs it, so that a body
// the workspace already holds costs no write. When opts has an observer
// (for example a classifier) it sees b once, on a goroutine of its own
// while b is hashed, so that on a machine with a core to spare the two
// cost the time of the slower one rather than their sum; IngestBytes
// returns once both have ended. The caller decides which bodies are worth
// the hand-off (the offloader passes none: it classifies byte input before
// the hash, see BENCHMARKS.md, "Speed code and its figures").
//
// b is not copied: it must not change until the Pending is ended.
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
	if o.Observer == nil {
		p.ref = artifact.RefOf(b)
		return p, nil
	}
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		_, _ = o.Observer.Write(b)
	}()
	p.ref = artifact.RefOf(b)
	<-observed
	return p, nil
}

// write puts the bytes held in memory into a new driver writer. It does
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
	if err := writeBody(ctx, w, p.b); err != nil {
		_ = w.Abort()
		return wrap("put", artifact.Ref{}, err)
	}
	p.w, p.b = w, nil
	return nil
}

// writeBody writes b to w in chunks, with ctx checked between them.
func writeBody(ctx context.Context, w driver.Writer, b []byte) error {
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
