package workspace

import (
	"context"
	"hash"
	"io"
	"sync"
)

// chunkSize is the unit in which bodies stream through the Store. A body
// that fits in one chunk is handled on the calling goroutine; a larger one
// is pipelined: the caller reads chunk k+1 while the hash, the observer and
// the driver's writer each work on their own goroutine through earlier
// chunks, so on a machine with two or more cores the slowest of them (on a
// fast backend, the hash) sets the pace instead of their sum.
const chunkSize = 256 << 10

// pipeDepth is the number of chunk buffers of a pipelined body: a stage may
// lag pipeDepth-1 chunks behind the reader. Memory per streamed body is
// therefore bounded by pipeDepth*chunkSize, whatever its size.
const pipeDepth = 4

var bufPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// stage consumes the chunks of one body in order, with their offsets. It
// only reads the chunk, and only until it returns.
type stage func(off int64, b []byte) error

// hashStage returns a stage that feeds h.
func hashStage(h hash.Hash) stage {
	return func(_ int64, b []byte) error {
		h.Write(b)
		return nil
	}
}

// pump reads r chunk by chunk, at most limit bytes (limit < 0: to EOF),
// and hands every chunk to every stage in order. It checks ctx before each
// chunk. It returns the bytes read, a read error from r (never io.EOF),
// and the first error of a stage or of ctx; it stops at the first error of
// any kind. When it returns, no stage runs any more.
func pump(ctx context.Context, r io.Reader, limit int64, stages ...stage) (n int64, rerr, serr error) {
	first := bufPool.Get().(*[]byte)
	defer bufPool.Put(first)
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	m, eof, err := fill(r, *first, limit)
	if err != nil {
		return int64(m), err, nil
	}
	if eof {
		// The whole body fits in one chunk: no goroutine.
		return int64(m), nil, runInline(stages, (*first)[:m])
	}
	p := startPipe(stages)
	bufs := [pipeDepth]*[]byte{first}
	defer func() {
		p.stop() // no stage may touch a buffer once it is back in the pool
		for _, bp := range bufs[1:] {
			if bp != nil {
				bufPool.Put(bp)
			}
		}
	}()
	for k := 0; ; k++ {
		p.send(n, (*bufs[k%pipeDepth])[:m])
		n += int64(m)
		if eof {
			return n, nil, p.wait()
		}
		if err := cmpOr(p.failed(), ctx.Err()); err != nil {
			return n, nil, p.stopWith(err)
		}
		// Chunk k+1 takes the buffer of chunk k+1-pipeDepth, once every
		// stage is done with it.
		next := &bufs[(k+1)%pipeDepth]
		if *next == nil {
			*next = bufPool.Get().(*[]byte)
		} else if err := p.release(); err != nil {
			return n, nil, p.stopWith(err)
		}
		rest := limit
		if limit >= 0 {
			rest = limit - n
		}
		m, eof, err = fill(r, **next, rest)
		if err != nil {
			return n + int64(m), err, p.stopWith(nil)
		}
		if m == 0 {
			return n, nil, p.wait()
		}
	}
}

func runInline(stages []stage, b []byte) error {
	for _, s := range stages {
		if err := s(0, b); err != nil {
			return err
		}
	}
	return nil
}

// chunk is one chunk in flight.
type chunk struct {
	off int64
	b   []byte
}

// pipe runs each stage on its own goroutine. Every stage gets every chunk
// in order on its own channel and acknowledges each on its own channel once
// done with it, even after an error (it then skips the work), so the
// reader can always reclaim buffers.
type pipe struct {
	in   []chan chunk
	ack  []chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
	done bool // stop has run
}

func startPipe(stages []stage) *pipe {
	p := &pipe{in: make([]chan chunk, len(stages)), ack: make([]chan struct{}, len(stages))}
	for i, s := range stages {
		// Neither channel ever blocks its sender: at most pipeDepth chunks
		// are in flight, and at most pipeDepth acknowledgements unclaimed.
		in, ack := make(chan chunk, pipeDepth), make(chan struct{}, pipeDepth)
		p.in[i], p.ack[i] = in, ack
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for c := range in {
				if p.failed() == nil {
					if err := s(c.off, c.b); err != nil {
						p.fail(err)
					}
				}
				ack <- struct{}{}
			}
		}()
	}
	return p
}

func (p *pipe) send(off int64, b []byte) {
	for _, in := range p.in {
		in <- chunk{off: off, b: b}
	}
}

// release waits until every stage is done with the oldest chunk not yet
// released, and returns the first stage error so far.
func (p *pipe) release() error {
	for _, ack := range p.ack {
		<-ack
	}
	return p.failed()
}

func (p *pipe) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

func (p *pipe) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// wait lets every stage finish every chunk sent, stops them and returns the
// first stage error.
func (p *pipe) wait() error {
	p.stop()
	return p.failed()
}

// stopWith stops the stages (they skip what is left once err is recorded)
// and returns the first stage error, or err.
func (p *pipe) stopWith(err error) error {
	if err != nil {
		p.fail(err)
	}
	return p.wait()
}

// stop closes the stages' inputs and waits for them to end. It is
// idempotent.
func (p *pipe) stop() {
	if p.done {
		return
	}
	p.done = true
	for _, in := range p.in {
		close(in)
	}
	p.wg.Wait()
}

// fill reads from r into buf until buf is full, limit bytes were read
// (limit < 0: no limit), or r ends. eof reports that no byte is left to
// read: r ended or the limit was reached. io.EOF is not an error.
func fill(r io.Reader, buf []byte, limit int64) (m int, eof bool, err error) {
	if limit >= 0 && int64(len(buf)) > limit {
		buf = buf[:limit]
	}
	for m < len(buf) {
		k, err := r.Read(buf[m:])
		m += k
		switch {
		case err == io.EOF:
			return m, true, nil
		case err != nil:
			return m, false, err
		case k == 0:
			// A reader may return 0, nil; try again, as io.ReadFull does.
		}
	}
	return m, limit >= 0 && int64(m) == limit, nil
}
