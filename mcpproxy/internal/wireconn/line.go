// Package wireconn carries mcpproxy's messages (wiremsg.Msg, ids as
// written) over a connection: newline-delimited JSON-RPC over a reader and
// a writer (Line: the stdio framing of Stream and Command, a long line
// offered to the session's Hook, a line over the limit skipped in constant
// memory), or any SDK connection (SDK, with stand-in ids for those the SDK
// cannot hold exactly).
package wireconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

// Conn is one side of a proxied session, carrying messages with their
// ids exactly as written. ReadMsg returns a *wiremsg.Bad for a message it
// cannot take (the connection goes on) and any other error when the
// connection has ended.
type Conn interface {
	ReadMsg(ctx context.Context) (*wiremsg.Msg, error)
	WriteMsg(ctx context.Context, m *wiremsg.Msg) error
	Close() error
}

// Of returns the proxy's view of a connection: the connection itself
// when it is one of the package's newline-delimited connections, else an
// adapter over the SDK's messages.
func Of(c mcp.Connection) Conn {
	if w, ok := c.(Conn); ok {
		return w
	}
	return &SDK{c: c}
}

// Line is a newline-delimited JSON-RPC connection. A goroutine reads
// lines so that Close unblocks a waiting read even when the reader cannot
// be interrupted (standard input).
type Line struct {
	in        chan lineRead
	closed    chan struct{}
	closeOnce sync.Once
	closeFn   func() error // releases the writer; nil for none
	closeErr  error

	wmu sync.Mutex
	w   io.Writer

	large atomic.Pointer[Streamer] // streams long lines (upstream side)
}

// Streamer is a Hook and the line length past which it is offered a
// line.
type Streamer struct {
	Hook  Hook
	Above int
}

// SetLarge installs the hook that may stream a line longer than above.
func (c *Line) SetLarge(h Hook, above int) { c.large.Store(&Streamer{Hook: h, Above: above}) }

// lineRead is one line read: a message, a malformed one, or the end.
type lineRead struct {
	m   *wiremsg.Msg
	err error
}

// LineBuffer is the read buffer; lines longer than it are assembled.
const LineBuffer = 64 << 10

// NewLine starts reading r: one message a line, each at most limit bytes
// (negative: no limit; the caller resolves its default), through a read
// buffer of buffer bytes (0: LineBuffer). closeFn, when set, releases w
// on Close.
func NewLine(r io.Reader, w io.Writer, limit int, closeFn func() error, buffer int) *Line {
	if buffer == 0 {
		buffer = LineBuffer
	}
	c := &Line{in: make(chan lineRead), closed: make(chan struct{}), closeFn: closeFn, w: w}
	go c.readLoop(bufio.NewReaderSize(r, buffer), limit)
	return c
}

func (c *Line) readLoop(br *bufio.Reader, limit int) {
	for {
		line, m, err := readLine(br, limit, &c.large)
		var r lineRead
		var bad *wiremsg.Bad
		switch {
		case errors.As(err, &bad):
			r.err, err = bad, nil
		case err != nil:
			r.err = err
		case m != nil:
			r.m = m
		case line == nil:
			continue // taken by the hook
		case len(bytes.TrimSpace(line)) == 0:
			continue
		default:
			r.m, r.err = wiremsg.Parse(line)
		}
		select {
		case c.in <- r:
		case <-c.closed:
			if r.m != nil {
				r.m.Release()
			}
			return
		}
		if err != nil {
			return
		}
	}
}

// readLine returns the next line without its newline. A line over limit
// bytes is consumed in constant memory and returned as a *wiremsg.Bad
// carrying its id when the scanner found one. A line that grows past
// the hook's length is given to the hook (when set), which reads it and
// returns its message, or a bad message, or nothing when it took the
// message itself. At the end of input it returns io.EOF; a *wiremsg.Bad
// error is one line's.
func readLine(br *bufio.Reader, limit int, large *atomic.Pointer[Streamer]) ([]byte, *wiremsg.Msg, error) {
	buf := []byte{}
	var over *jsonstream.IDScanner
	for {
		if hook := large.Load(); hook != nil && over == nil && len(buf) >= hook.Above {
			rest := &LineRest{br: br, budget: -1}
			if limit >= 0 {
				rest.budget = limit - len(buf)
			}
			m, err := hook.Hook(buf, rest)
			rest.Drain() // nothing, unless the hook failed before the end
			return nil, m, err
		}
		chunk, err := br.ReadSlice('\n')
		content := chunk
		if err == nil {
			content = chunk[:len(chunk)-1]
		}
		switch {
		case over != nil:
			over.Feed(content)
		case limit >= 0 && len(buf)+len(content) > limit:
			over = &jsonstream.IDScanner{}
			over.Feed(buf)
			over.Feed(content)
			buf = nil
		default:
			buf = append(buf, content...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil || errors.Is(err, io.EOF) && (len(buf) > 0 || over != nil):
			if over != nil {
				return nil, nil, &wiremsg.Bad{Code: jsonrpc.CodeInvalidRequest, Why: wiremsg.WhyTooLarge, ID: over.ID()}
			}
			return buf, nil, nil
		}
		return nil, nil, err
	}
}

// ReadMsg returns the next message.
func (c *Line) ReadMsg(ctx context.Context) (*wiremsg.Msg, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.in:
		return r.m, r.err
	}
}

// WriteMsg writes m as one line; a spooled value is copied from its spool.
func (c *Line) WriteMsg(ctx context.Context, m *wiremsg.Msg) error {
	if m.Big == nil {
		return c.writeLine(ctx, m.Encode())
	}
	defer m.Release()
	head, tail := m.EncodeAround(0)
	r, err := m.Big.Reader()
	if err != nil {
		return err
	}
	return c.write(ctx, func(w io.Writer) error {
		if _, err := w.Write(head); err != nil {
			return err
		}
		if _, err := io.CopyBuffer(w, r, make([]byte, bound.StreamBuffer)); err != nil {
			return err
		}
		_, err := w.Write(append(tail, '\n'))
		return err
	})
}

func (c *Line) writeLine(ctx context.Context, b []byte) error {
	return c.write(ctx, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// write runs fn on the writer, one message at a time.
func (c *Line) write(ctx context.Context, fn func(io.Writer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.closed:
		return errConnClosed
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return fn(c.w)
}

var errConnClosed = errors.New("mcpproxy: connection closed")

// Close stops reading and releases the writer; it returns the same error
// every time.
func (c *Line) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.closeFn != nil {
			// Not under wmu: closing the program's input is what unblocks
			// a write stuck on a full pipe.
			c.closeErr = c.closeFn()
		}
	})
	return c.closeErr
}

// Read implements mcp.Connection for users of the SDK (an mcp.Client over
// Command): a malformed message is an error there, as in the SDK's own
// transports.
func (c *Line) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.ReadMsg(ctx)
	if err != nil {
		return nil, err
	}
	return jsonrpc.DecodeMessage(m.Encode())
}

// Write implements mcp.Connection.
func (c *Line) Write(ctx context.Context, m jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	return c.writeLine(ctx, b)
}

// SessionID implements mcp.Connection; stdio has no session id.
func (c *Line) SessionID() string { return "" }

// Hook is called by a Line's reader with the first bytes of a long
// line and a reader of the rest of the line. It reads the line and returns
// its message (to be handled as any other), or a *wiremsg.Bad error, or
// nothing when it handled the message itself.
type Hook func(prefix []byte, rest io.Reader) (*wiremsg.Msg, error)

// LineRest reads the rest of the current line from br, up to and
// excluding its newline, failing past budget bytes.
type LineRest struct {
	br     *bufio.Reader
	budget int // < 0: no limit
	done   bool
}

// Read reads the line's next bytes; io.EOF at its newline.
func (l *LineRest) Read(p []byte) (int, error) {
	if l.done {
		return 0, io.EOF
	}
	if _, err := l.br.Peek(1); err != nil {
		l.done = true
		return 0, io.EOF // the last line of the stream
	}
	buf, _ := l.br.Peek(l.br.Buffered())
	n := len(buf)
	switch i := bytes.IndexByte(buf, '\n'); {
	case i == 0:
		_, _ = l.br.Discard(1)
		l.done = true
		return 0, io.EOF
	case i > 0:
		n = i
	}
	n = copy(p, buf[:n])
	_, _ = l.br.Discard(n)
	if l.budget >= 0 {
		if l.budget -= n; l.budget < 0 {
			return n, wiremsg.ErrLineTooLarge
		}
	}
	return n, nil
}

// NoLimit lifts the budget, so that the rest can be read for its id.
func (l *LineRest) NoLimit() { l.budget = -1 }

// Drain discards the rest of the line in constant memory.
func (l *LineRest) Drain() {
	buf := make([]byte, 32<<10)
	for !l.done {
		if _, err := l.Read(buf); err != nil && !errors.Is(err, wiremsg.ErrLineTooLarge) {
			return
		}
		if l.budget < 0 {
			l.budget = -1 // no further limit errors while draining
		}
	}
}
