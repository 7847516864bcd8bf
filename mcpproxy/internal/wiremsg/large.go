package wiremsg

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// Long messages in bounded memory, both ways.
//
// A line that grows past the connection's streaming length (mcpproxy's
// streamAbove) is not assembled in memory. It is checked as it is read
// (exactly as json.Valid would check it) and its small top-level values
// (jsonrpc, id, method, error) are kept, while the value of params or
// result, the one that makes it long, is copied to a private spool file in
// the directory given (mcpproxy's Options.TempDir), removed as soon as it
// is created. The message then goes the usual way, and a connection of
// mcpproxy writes the spooled value to the other side in 64 KiB pieces: a
// large tools/call argument from the client or a large resources/read
// result from the server passes in constant memory. The few rewrites that
// need the whole value (initialize, the list methods, a tools/call result
// when streaming is off, any SDK connection) read it back into memory, as
// they read a short message, up to the message limit. On the upstream side
// a tools/call result is bounded as it is read instead (mcpproxy's
// stream.go). Without a spool file (the directory cannot be written), the
// value is held in memory as before.

// ErrLineTooLarge means a streamed line went over the message limit.
var ErrLineTooLarge = errors.New("mcpproxy: message over the size limit")

// RestReader is the rest of one long message past its first bytes (what
// a wireconn.Hook is handed), failing once with ErrLineTooLarge past
// the message limit, and Drain discarding what is left of it in constant
// memory (a line's rest, or an HTTP body's or server-sent event's; see
// package httpup's large.go).
type RestReader interface {
	io.Reader
	Drain()
	NoLimit() // lifts the message limit, so that the rest can be read for its id
}

// ErrCut means the connection failed inside a message: what came of it is
// not the message.
var ErrCut = errors.New("mcpproxy: the upstream's message was cut short")

// spool holds the long values of one message.
type spool struct {
	f    *os.File // nil: held in mem
	w    *bufio.Writer
	mem  jsonstream.Buf
	size int64
}

// newSpool creates a spool file in dir (os.TempDir when empty), or an
// in-memory spool when none can be created.
func newSpool(dir string) *spool {
	f, err := os.CreateTemp(dir, driver.TempPrefix+"mcp-*")
	if err != nil {
		return &spool{}
	}
	_ = os.Remove(f.Name()) // private, and never left behind
	return &spool{f: f, w: bufio.NewWriterSize(f, bound.StreamBuffer)}
}

func (s *spool) Write(p []byte) (int, error) {
	s.size += int64(len(p))
	if s.f == nil {
		return s.mem.Write(p)
	}
	return s.w.Write(p)
}

func (s *spool) WriteByte(c byte) error {
	s.size++
	if s.f == nil {
		return s.mem.WriteByte(c)
	}
	return s.w.WriteByte(c)
}

// section returns a reader of n bytes at off.
func (s *spool) section(off, n int64) (io.Reader, error) {
	if s.f == nil {
		return bytes.NewReader(s.mem[off : off+n]), nil
	}
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	return io.NewSectionReader(s.f, off, n), nil
}

func (s *spool) close() {
	if s != nil && s.f != nil {
		_ = s.f.Close()
	}
}

// Spooled is the spooled value of a message's params or result.
type Spooled struct {
	key    string // "params" or "result"
	sp     *spool
	off, n int64
	// The params fields the proxy routes by (tools/call's name,
	// resources/read's uri), as encoding/json would decode them.
	Name, URI string
	URIBad    bool // params would not decode into the uri struct
}

// Reader returns the value's bytes.
func (b *Spooled) Reader() (io.Reader, error) { return b.sp.section(b.off, b.n) }

// Has reports whether m's key is held in a spool.
func (m *Msg) Has(key string) bool { return m.Big != nil && m.Big.key == key }

// Load reads a spooled value into memory (a rewrite needs it whole).
func (m *Msg) Load() error {
	b := m.Big
	if b == nil {
		return nil
	}
	m.Big = nil
	defer b.sp.close()
	r, err := b.Reader()
	if err != nil {
		return err
	}
	v := make(json.RawMessage, b.n)
	if _, err := io.ReadFull(r, v); err != nil {
		return err
	}
	if b.key == "params" {
		m.Params = v
	} else {
		m.Result = v
	}
	return nil
}

// Release drops a spooled value that will not be written.
func (m *Msg) Release() {
	if m.Big != nil {
		m.Big.sp.close()
		m.Big = nil
	}
}

// LongLine reads one long line.
type LongLine struct {
	j   *jsonstream.Reader
	sc  jsonstream.IDScanner // finds the id of a line that cannot be taken
	lr  RestReader
	dir string
	sp  *spool
	m   Msg
	ver json.RawMessage
}

// NewLongLine reads the line that starts with prefix and goes on in rest.
func NewLongLine(prefix []byte, rest io.Reader, dir string, size int) *LongLine {
	l := &LongLine{dir: dir}
	l.lr, _ = rest.(RestReader)
	src := &scanTee{r: io.MultiReader(bytes.NewReader(prefix), rest), sc: &l.sc}
	l.j = jsonstream.NewReader(bufio.NewReaderSize(src, size), 0)
	return l
}

// scanTee feeds what is read to an id scanner.
type scanTee struct {
	r  io.Reader
	sc *jsonstream.IDScanner
}

func (t *scanTee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.sc.Feed(p[:n])
	return n, err
}

// ResultWalker consumes a response's result value at the reader, given the
// response's id; nil means the result is spooled.
type ResultWalker func(id json.RawMessage) func(j *jsonstream.Reader) error

// Read reads the line's message; at is asked what to do with a result
// whose id came before it (nil: spool every result). A line that cannot be
// taken gives a *Bad; the line is always read to its end.
func (l *LongLine) Read(at ResultWalker) (*Msg, error) {
	err := l.walk(at)
	if err == nil {
		if _, perr := l.j.Peek(jsonstream.Discard{}); perr != io.EOF {
			err = jsonstream.EOFBad(perr)
			if perr == nil {
				err = jsonstream.ErrBadJSON
			}
		}
	}
	if err != nil {
		l.m.Release()
		l.drain()
		return nil, l.Bad(err)
	}
	m, err := Check(&l.m, l.ver)
	if err != nil {
		l.m.Release()
	}
	return m, err
}

// Bad is the *Bad for a line that failed with err.
func (l *LongLine) Bad(err error) error {
	var b *Bad
	switch {
	case errors.As(err, &b):
		return b
	case errors.Is(err, ErrLineTooLarge):
		return &Bad{Code: jsonrpc.CodeInvalidRequest, Why: WhyTooLarge, ID: l.sc.ID()}
	case errors.Is(err, jsonstream.ErrBadJSON), errors.Is(err, jsonstream.ErrBadString):
		return &Bad{Code: jsonrpc.CodeParseError, Why: WhyParse, ID: l.sc.ID()}
	case errors.Is(err, bound.ErrNotBounded), errors.As(err, new(base64.CorruptInputError)):
		return &Bad{Code: jsonrpc.CodeInternalError, Why: WhyNotBounded, ID: l.sc.ID()}
	case errors.Is(err, ErrCut):
		return &Bad{Code: jsonrpc.CodeInternalError, Why: WhyCut, ID: l.sc.ID()}
	}
	return &Bad{Code: jsonrpc.CodeInternalError, Why: WhyTaken, ID: l.sc.ID()}
}

// drain reads the rest of the line through the scanner, in constant memory.
func (l *LongLine) drain() {
	if l.lr != nil {
		l.lr.NoLimit()
	}
	// The reader returns a pending over-limit error once, then goes on.
	for range 2 {
		if _, err := io.Copy(io.Discard, l.j.Buffered()); err == nil {
			return
		}
	}
}

// walk reads the top-level object.
func (l *LongLine) walk(at ResultWalker) error {
	c, err := l.j.Next(jsonstream.Discard{})
	if err != nil {
		return err
	}
	if c != '{' {
		if err := l.j.Value(jsonstream.Discard{}); err != nil {
			return err
		}
		if _, err := l.j.Peek(jsonstream.Discard{}); err != io.EOF {
			return jsonstream.EOFBad(err) // more after the value (or a failed read)
		}
		if c == '[' {
			return &Bad{Code: jsonrpc.CodeInvalidRequest, Why: WhyBatch}
		}
		return &Bad{Code: jsonrpc.CodeInvalidRequest, Why: WhyObject}
	}
	m := &l.m
	walked := false
	return l.j.Members(jsonstream.Discard{}, func(key string) (err error) {
		switch key {
		case "jsonrpc":
			l.ver, err = l.j.Small(jsonstream.Discard{})
		case "id":
			m.ID, err = l.j.Small(jsonstream.Discard{})
		case "method":
			if walked {
				return bound.ErrNotBounded // a request after all: it must not be taken as the answer
			}
			m.Method, err = l.j.Small(jsonstream.Discard{})
		case "error":
			m.Err, err = l.j.Small(jsonstream.Discard{})
		case "params", "result":
			if walked {
				return bound.ErrNotBounded // a second result, or params, after one bounded as it came
			}
			if key == "result" && at != nil && m.ID != nil && m.Method == nil && m.Big == nil {
				if w := at(m.ID); w != nil {
					walked = true
					m.Release()
					m.Big = &Spooled{key: key}
					return w(l.j)
				}
			}
			return l.spill(key)
		default:
			return l.j.Value(jsonstream.Discard{})
		}
		return err
	}, true)
}

// spill copies the value of key to the spool; a value spooled before under
// the other key is read back into memory (a message has one long value).
func (l *LongLine) spill(key string) error {
	m := &l.m
	if m.Big != nil && m.Big.key != key {
		if err := m.Load(); err != nil {
			return err
		}
		l.sp = nil
	}
	if l.sp == nil {
		l.sp = newSpool(l.dir)
	}
	switch key {
	case "params":
		m.Params = nil
	case "result":
		m.Result = nil
	}
	b := &Spooled{key: key, sp: l.sp, off: l.sp.size}
	c, err := l.j.Next(l.sp)
	if err != nil {
		return err
	}
	b.off = l.sp.size
	if key == "params" && c == '{' {
		err = l.j.Members(l.sp, func(k string) error { return l.routed(b, k) }, true)
	} else {
		b.URIBad = c != 'n' // anything but null fails to decode into a struct
		err = l.j.Value(l.sp)
	}
	b.n = l.sp.size - b.off
	m.Big = b
	return err
}

// routed reads one member of a spooled params object, keeping name and uri
// as json.Unmarshal into the proxy's params structs would (keys matched
// without case, the last string wins; for uri, a value of another type is
// a decoding error).
func (l *LongLine) routed(b *Spooled, k string) error {
	var into *string
	switch {
	case strings.EqualFold(k, "name"):
		into = &b.Name
	case strings.EqualFold(k, "uri"):
		into = &b.URI
	default:
		return l.j.Value(l.sp)
	}
	v, err := l.j.Small(l.sp)
	switch {
	case err != nil:
		return err
	case v[0] == '"':
		return json.Unmarshal(v, into)
	case into == &b.URI && string(v) != "null":
		b.URIBad = true
	}
	return nil
}
