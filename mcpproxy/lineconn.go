package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
)

// wireConn is one side of a proxied session, carrying messages with their
// ids exactly as written. readMsg returns a *badMessage for a message it
// cannot take (the connection goes on) and any other error when the
// connection has ended.
type wireConn interface {
	readMsg(ctx context.Context) (*wmsg, error)
	writeMsg(ctx context.Context, m *wmsg) error
	Close() error
}

// wireOf returns the proxy's view of a connection: the connection itself
// when it is one of the package's newline-delimited connections, else an
// adapter over the SDK's messages.
func wireOf(c mcp.Connection) wireConn {
	if w, ok := c.(wireConn); ok {
		return w
	}
	return &sdkConn{c: c}
}

// Stream is an mcp.Transport speaking newline-delimited JSON-RPC over a
// reader and a writer, such as a process's standard input and output (the
// client side of "hybridctx mcp"). Unlike mcp.IOTransport, a Proxy reads it
// without the SDK's decoding: ids are answered exactly as sent (1.5 stays
// 1.5), and a malformed line is answered with a JSON-RPC error, or dropped
// when it carries no usable id, while the session goes on. Closing the
// connection closes neither Reader nor Writer.
type Stream struct {
	Reader io.Reader
	Writer io.Writer
	// MaxMessageBytes bounds one message read from Reader; a longer line is
	// skipped in constant memory and answered with a JSON-RPC error. Zero
	// means DefaultMaxMessageBytes; a negative value means no limit.
	MaxMessageBytes int
	// buffer is the read buffer (0: lineBuffer); tests make it small so
	// that short lines take the long-line path.
	buffer int
}

// Connect starts reading Reader.
func (s *Stream) Connect(context.Context) (mcp.Connection, error) {
	if s.Reader == nil || s.Writer == nil {
		return nil, errors.New("mcpproxy: Stream needs a Reader and a Writer")
	}
	return newLineConn(s.Reader, s.Writer, s.MaxMessageBytes, nil, s.buffer), nil
}

// lineConn is a newline-delimited JSON-RPC connection. A goroutine reads
// lines so that Close unblocks a waiting read even when the reader cannot
// be interrupted (standard input).
type lineConn struct {
	in        chan lineRead
	closed    chan struct{}
	closeOnce sync.Once
	closeFn   func() error // releases the writer; nil for none
	closeErr  error

	wmu sync.Mutex
	w   io.Writer

	large atomic.Pointer[streamer] // streams long lines (upstream side)
}

// streamer is a largeHook and the line length past which it is offered a
// line.
type streamer struct {
	hook  largeHook
	above int
}

// setLarge installs the hook that may stream a line longer than above.
func (c *lineConn) setLarge(h largeHook, above int) { c.large.Store(&streamer{hook: h, above: above}) }

// lineRead is one line read: a message, a malformed one, or the end.
type lineRead struct {
	m   *wmsg
	err error
}

// lineBuffer is the read buffer; lines longer than it are assembled.
const lineBuffer = 64 << 10

func newLineConn(r io.Reader, w io.Writer, limit int, closeFn func() error, buffer int) *lineConn {
	if limit == 0 {
		limit = DefaultMaxMessageBytes
	}
	if buffer == 0 {
		buffer = lineBuffer
	}
	c := &lineConn{in: make(chan lineRead), closed: make(chan struct{}), closeFn: closeFn, w: w}
	go c.readLoop(bufio.NewReaderSize(r, buffer), limit)
	return c
}

func (c *lineConn) readLoop(br *bufio.Reader, limit int) {
	for {
		line, m, err := readLine(br, limit, &c.large)
		var r lineRead
		var bad *badMessage
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
			r.m, r.err = parseMessage(line)
		}
		select {
		case c.in <- r:
		case <-c.closed:
			if r.m != nil {
				r.m.release()
			}
			return
		}
		if err != nil {
			return
		}
	}
}

// readLine returns the next line without its newline. A line over limit
// bytes is consumed in constant memory and returned as a *badMessage
// carrying its id when the scanner found one. A line that grows past
// the hook's length is given to the hook (when set), which reads it and
// returns its message, or a bad message, or nothing when it took the
// message itself. At the end of input it returns io.EOF; a *badMessage
// error is one line's.
func readLine(br *bufio.Reader, limit int, large *atomic.Pointer[streamer]) ([]byte, *wmsg, error) {
	buf := []byte{}
	var over *jsonstream.IDScanner
	for {
		if hook := large.Load(); hook != nil && over == nil && len(buf) >= hook.above {
			rest := &lineRest{br: br, budget: -1}
			if limit >= 0 {
				rest.budget = limit - len(buf)
			}
			m, err := hook.hook(buf, rest)
			rest.drain() // nothing, unless the hook failed before the end
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
				return nil, nil, &badMessage{code: jsonrpc.CodeInvalidRequest, why: whyTooLarge, id: over.ID()}
			}
			return buf, nil, nil
		}
		return nil, nil, err
	}
}

// readMsg returns the next message.
func (c *lineConn) readMsg(ctx context.Context) (*wmsg, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.in:
		return r.m, r.err
	}
}

// writeMsg writes m as one line; a spooled value is copied from its spool.
func (c *lineConn) writeMsg(ctx context.Context, m *wmsg) error {
	if m.big == nil {
		return c.writeLine(ctx, m.encode())
	}
	defer m.release()
	head, tail := m.encodeAround(0)
	r, err := m.big.reader()
	if err != nil {
		return err
	}
	return c.write(ctx, func(w io.Writer) error {
		if _, err := w.Write(head); err != nil {
			return err
		}
		if _, err := io.CopyBuffer(w, r, make([]byte, streamBuffer)); err != nil {
			return err
		}
		_, err := w.Write(append(tail, '\n'))
		return err
	})
}

func (c *lineConn) writeLine(ctx context.Context, b []byte) error {
	return c.write(ctx, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// write runs fn on the writer, one message at a time.
func (c *lineConn) write(ctx context.Context, fn func(io.Writer) error) error {
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
func (c *lineConn) Close() error {
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
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.readMsg(ctx)
	if err != nil {
		return nil, err
	}
	return jsonrpc.DecodeMessage(m.encode())
}

// Write implements mcp.Connection.
func (c *lineConn) Write(ctx context.Context, m jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	return c.writeLine(ctx, b)
}

// SessionID implements mcp.Connection; stdio has no session id.
func (c *lineConn) SessionID() string { return "" }

// sdkConn adapts an SDK connection (in-memory, or another transport) to the
// proxy's view. The SDK holds an id as an int64 or a string, so a request
// whose id it cannot hold exactly goes out under a stand-in string id, and
// the response's id is restored.
type sdkConn struct {
	c     mcp.Connection
	mu    sync.Mutex
	next  int64
	alias map[string]json.RawMessage // stand-in id key → the exact id
}

func (s *sdkConn) readMsg(ctx context.Context) (*wmsg, error) {
	msg, err := s.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, &badMessage{code: jsonrpc.CodeParseError, why: whyParse}
	}
	m, err := parseMessage(b)
	if err != nil {
		return nil, err
	}
	if !m.isCall() {
		key, _ := idKey(m.id)
		s.mu.Lock()
		if raw, ok := s.alias[key]; ok {
			m.id = raw
			delete(s.alias, key)
		}
		s.mu.Unlock()
	}
	return m, nil
}

func (s *sdkConn) writeMsg(ctx context.Context, m *wmsg) error {
	if m.isRequest() && !sdkExact(m.id) {
		s.mu.Lock()
		s.next++
		stand := json.RawMessage(fmt.Sprintf(`"hybridctx-id-%d"`, s.next))
		if s.alias == nil {
			s.alias = map[string]json.RawMessage{}
		}
		key, _ := idKey(stand)
		s.alias[key] = m.id
		s.mu.Unlock()
		c := *m
		c.id = stand
		m = &c
	}
	msg, err := jsonrpc.DecodeMessage(m.encode())
	if err != nil {
		return err
	}
	return s.c.Write(ctx, msg)
}

func (s *sdkConn) Close() error { return s.c.Close() }

// sdkExact reports whether the SDK's jsonrpc.ID holds id exactly: a string,
// or an integer written as the SDK writes it.
func sdkExact(id json.RawMessage) bool {
	if len(id) > 0 && id[0] == '"' {
		return true
	}
	v, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil && strconv.FormatInt(v, 10) == string(id)
}
