package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
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

// cancelableReader reads r in a goroutine of its own, so that a read that
// blocks on a pipe, a terminal or a FIFO yields to the cancellation of ctx
// instead of holding the command until input arrives. After ctx ends every
// Read fails with its error; the goroutine is left to the blocked read,
// which the process's exit ends.
type cancelableReader struct {
	ctx     context.Context
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

func newCancelableReader(ctx context.Context, r io.Reader) *cancelableReader {
	c := &cancelableReader{ctx: ctx, r: r, reqs: make(chan int), res: make(chan readResult, 1)}
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
