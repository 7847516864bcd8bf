package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// SignalError is the cancellation cause the hybridctx program gives the
// context of Main when the process receives SIGINT or SIGTERM (see
// context.WithCancelCause). A command that did not succeed then exits
// ExitInterrupted or ExitTerminated, after every write it had begun was
// undone: nothing is decided, no event is reported.
type SignalError struct {
	Signal syscall.Signal
}

func (e *SignalError) Error() string { return "interrupted by " + signalName(e.Signal) }

// signalName names the signals SignalError is meant for.
func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// signalExit returns the exit code and message of a command that ended
// with code after ctx was cancelled by a signal, and ok false otherwise.
func signalExit(ctx context.Context, code int) (int, string, bool) {
	var se *SignalError
	if code == ExitOK || !errors.As(context.Cause(ctx), &se) {
		return 0, "", false
	}
	return 128 + int(se.Signal), se.Error() + "; nothing was decided", true
}

// Signals turns the process's SIGINT and SIGTERM into the cancellation of
// the context the program runs Main under (cause *SignalError). A second
// signal calls exit at once. Sync lets a command that read its input to
// the end wait until every signal the process received before that has
// cancelled the context, so a signal that came first always wins over the
// end of input: Ctrl-C in "producer | hybridctx offload" reaches both, and
// the producer's exit ends the input, but nothing cut short is decided.
// See docs/cli.md, "Signals".
type Signals struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	exit   func(code int)
	ch     chan os.Signal
	acks   chan struct{}
	mu     sync.Mutex // one Sync at a time
}

// syncWait bounds how long Sync waits for its own signal to come back.
const syncWait = time.Second

// NotifySignals starts watching SIGINT and SIGTERM for a context derived
// from parent (Context). exit is called with 128+the signal number when a
// second signal arrives. The watch lasts until the process exits.
func NotifySignals(parent context.Context, exit func(code int)) *Signals {
	ctx, cancel := context.WithCancelCause(parent)
	s := &Signals{ctx: ctx, cancel: cancel, exit: exit, ch: make(chan os.Signal, 8),
		acks: make(chan struct{}, 1)}
	signal.Notify(s.ch, watchedSignals...)
	go s.loop()
	return s
}

// Context returns the context a signal cancels.
func (s *Signals) Context() context.Context { return s.ctx }

// loop handles the signals in the order the runtime delivers them: the
// sync signal Sync raised is acknowledged only after every signal before
// it in the channel took effect.
func (s *Signals) loop() {
	first := true
	for v := range s.ch {
		sig, _ := v.(syscall.Signal)
		switch {
		case isSyncSignal(sig):
			select {
			case s.acks <- struct{}{}:
			default:
			}
		case first:
			first = false
			s.cancel(&SignalError{Signal: sig})
		default:
			s.exit(128 + int(sig))
		}
	}
}

// Sync returns once every SIGINT or SIGTERM the process received before
// the call has cancelled the context (at most about syncWait). It first
// waits until no such signal is pending or half-delivered (settleSignals),
// then raises the sync signal (SIGWINCH, ignored by default) at the
// process and waits for its echo: the runtime passes queued signals on
// lowest number first, so the echo comes after any SIGINT (2) or SIGTERM
// (15) already queued. A nil Signals does nothing.
func (s *Signals) Sync() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.acks: // a stale echo (a terminal resize, say)
	default:
	}
	deadline := time.Now().Add(syncWait)
	settleSignals(deadline)
	if s.ctx.Err() != nil || !raiseSyncSignal() {
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-s.acks:
	case <-s.ctx.Done():
	case <-t.C:
	}
}

// cancelableReader reads r in a goroutine of its own, so that a read that
// blocks on a pipe, a terminal or a FIFO yields to the cancellation of ctx
// instead of holding the command until input arrives. After ctx ends every
// Read fails with its error; the goroutine is left to the blocked read,
// which the process's exit ends. When r ends (io.EOF or an error), sync
// runs first: a signal received before the end cancels ctx, and Read then
// returns ctx's error instead, so the input is never taken as complete.
type cancelableReader struct {
	ctx     context.Context
	sync    func()
	r       io.Reader
	reqs    chan int
	res     chan readResult
	pending bool
	buf     []byte
}

type readResult struct {
	n   int
	err error
}

func newCancelableReader(ctx context.Context, r io.Reader, sync func()) *cancelableReader {
	c := &cancelableReader{ctx: ctx, sync: sync, r: r, reqs: make(chan int), res: make(chan readResult, 1)}
	go c.loop()
	return c
}

// loop serves one read request at a time into buf; the next request comes
// only after Read copied the previous result out, so buf is never shared.
func (c *cancelableReader) loop() {
	for n := range c.reqs {
		if cap(c.buf) < n {
			c.buf = make([]byte, n)
		}
		k, err := c.r.Read(c.buf[:n])
		c.res <- readResult{k, err}
	}
}

func (c *cancelableReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !c.pending {
		c.pending = true
		c.reqs <- min(len(p), 1<<20)
	}
	select {
	case r := <-c.res:
		c.pending = false
		if r.err != nil && c.sync != nil {
			c.sync()
			if err := c.ctx.Err(); err != nil {
				return 0, err
			}
		}
		return copy(p, c.buf[:r.n]), r.err
	case <-c.ctx.Done():
		return 0, c.ctx.Err()
	}
}

// close stops the goroutine once its read returns.
func (c *cancelableReader) close() { close(c.reqs) }

// openFIFO opens the named pipe at path for reading, which blocks until a
// writer opens it, in a goroutine so that ctx's cancellation ends the wait.
// A cancelled wait releases the blocked open by opening the pipe for writing
// once, without blocking.
func openFIFO(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		return o.f, o.err
	case <-ctx.Done():
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
		go func() {
			if o := <-done; o.f != nil {
				_ = o.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
