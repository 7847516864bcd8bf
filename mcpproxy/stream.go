package mcpproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
)

// Bounding large tools/call results as they are read.
//
// A long upstream line (past streamAbove bytes; see large.go) that answers
// a forwarded tools/call whose id came before its result is bounded while
// it is read. The result is walked as JSON (fields in any order): every
// payload the bounder decides on its own, when its JSON text is longer
// than window bytes, goes straight into the offloader's stream (hashed,
// classified and written, never held whole):
//
//   - a content block's "text", unescaped on the fly;
//   - an image or audio block's base64 "data", unescaped and decoded;
//   - an embedded resource's "text" or base64 "blob", the same way;
//   - "structuredContent", whose stored body is its JSON text as written.
//
// The rest of the result (its skeleton) is kept in memory with a token in
// each streamed payload's place, then bounded by the whole-message code
// with those payloads already decided: the answer and the stored bodies
// are byte for byte the ones the whole message gives (FuzzStreamedResult).
// A result whose id comes after it is spooled first (large.go), then
// walked from the spool. window is six times the threshold, so that a
// streamed text (at least a sixth of its JSON text once unescaped) is
// always over it: a streamed payload is never inline.
//
// Differences from the whole-message path, all for malformed or unusual
// results, which get a JSON-RPC error instead of a bounded result: a
// streamed block whose type, once known, does not hold its payload where it
// was streamed from (or that repeats a key), a streamed block whose other
// fields are themselves over the threshold, invalid base64, base64 that
// decodes to no more than the threshold, and a message that turns out not
// to be valid JSON.

// streamAbove is the line length past which a line is read as a long one.
const streamAbove = 1 << 20

// streamBuffer is the read buffer of a streamed payload.
const streamBuffer = 64 << 10

// maxWindow bounds the look-ahead that tells a short payload from one to
// stream: with a larger threshold, payloads are read into the skeleton.
const maxWindow = 1 << 20

// errLineTooLarge means a streamed line went over the message limit.
var errLineTooLarge = errors.New("mcpproxy: message over the size limit")

// largeHook is called by a lineConn's reader with the first bytes of a long
// line and a reader of the rest of the line. It reads the line and returns
// its message (to be handled as any other), or a *badMessage error, or
// nothing when it handled the message itself.
type largeHook func(prefix []byte, rest io.Reader) (*wmsg, error)

// restReader is what a largeHook's rest is: the rest of one message, failing
// once with errLineTooLarge past the message limit, and drain discarding
// what is left of it in constant memory (a line's rest, or an HTTP body's
// or server-sent event's; see upstream_http_large.go).
type restReader interface {
	io.Reader
	drain()
	noLimit() // lifts the message limit, so that the rest can be read for its id
}

// lineRest reads the rest of the current line from br, up to and
// excluding its newline, failing past budget bytes.
type lineRest struct {
	br     *bufio.Reader
	budget int // < 0: no limit
	done   bool
}

func (l *lineRest) Read(p []byte) (int, error) {
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
			return n, errLineTooLarge
		}
	}
	return n, nil
}

func (l *lineRest) noLimit() { l.budget = -1 }

// drain discards the rest of the line in constant memory.
func (l *lineRest) drain() {
	buf := make([]byte, 32<<10)
	for !l.done {
		if _, err := l.Read(buf); err != nil && !errors.Is(err, errLineTooLarge) {
			return
		}
		if l.budget < 0 {
			l.budget = -1 // no further limit errors while draining
		}
	}
}

// endsString reports whether b (a string's body) holds its closing quote.
func endsString(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return true
		}
	}
	return false
}

// passLarge is the session's largeHook for the client side: a long message
// is read with its long value spooled.
func (s *session) passLarge(prefix []byte, rest io.Reader) (*wmsg, error) {
	l := newLongLine(prefix, rest, s.p.tempDir, streamBuffer)
	m, err := l.read(nil)
	if err != nil {
		return nil, l.bad(err)
	}
	return m, nil
}

// streamLarge is the session's largeHook for the upstream side: a long
// message is read with its long value spooled, except that a tools/call
// result is bounded as it is read (or, when its id comes after it, from
// the spool), and a response to nothing in progress is dropped unread.
func (s *session) streamLarge(prefix []byte, rest io.Reader) (*wmsg, error) {
	l := newLongLine(prefix, rest, s.p.tempDir, maxWindow+streamBuffer)
	var w *resultWalk
	var c *call
	dropped := ""
	m, err := l.read(func(id json.RawMessage) func(*jsonstream.Reader) error {
		c, dropped = s.pendingCall(id)
		switch {
		case dropped != "":
			return func(j *jsonstream.Reader) error { return j.Value(jsonstream.Discard{}) }
		case c.method != methodToolsCall:
			return nil
		}
		w = s.newResultWalk(c)
		s.p.streamed.Add(1)
		return w.walk
	})
	switch {
	case w != nil:
		if err == nil {
			s.sendStreamed(c, w)
			return nil, nil
		}
	case err != nil:
		return nil, l.bad(err)
	case dropped != "":
		s.drop(fromUpstream, dropped)
		return nil, nil
	case m.has("result") && !m.isCall():
		// The id came after the result: bound it from the spool.
		if c, _ = s.pendingCall(m.id); c != nil && c.method == methodToolsCall {
			w = s.newResultWalk(c)
			s.p.streamed.Add(1)
			r, rerr := m.big.reader()
			if err = rerr; err == nil {
				err = w.walk(jsonstream.NewReader(bufio.NewReaderSize(r, w.readSize()), 1))
			}
			m.release()
			if err == nil {
				s.sendStreamed(c, w)
				return nil, nil
			}
		}
	}
	if w == nil {
		return m, nil
	}
	// The walk failed: the call gets the error, the line is dropped.
	var bad *badMessage
	errors.As(l.bad(err), &bad)
	s.drop(fromUpstream, bad.why)
	if c = s.take(callKey(c)); c != nil {
		answer := error(upstreamBad(bad))
		if err := c.ctx.Err(); err != nil {
			answer = err // cancelled by the client
		}
		c.cancel()
		s.respond(c.id, nil, answer)
	}
	return nil, nil
}

// pendingCall returns the forwarded request a response with id answers,
// or why the response is dropped.
func (s *session) pendingCall(id json.RawMessage) (*call, string) {
	key, ok := idKey(s.clientID(id))
	if !ok {
		return nil, whyID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.pending[key]; c != nil {
		return c, ""
	}
	if _, local := s.local[key]; local {
		return nil, dropLocal
	}
	return nil, dropUnknown
}

// sendStreamed answers the call with its result bounded; a result that
// cannot be bounded as it was streamed gets a JSON-RPC error.
func (s *session) sendStreamed(c *call, w *resultWalk) {
	if c = s.take(callKey(c)); c == nil {
		return
	}
	res, err := w.finish()
	c.cancel()
	if err != nil {
		s.drop(fromUpstream, whyNotBounded)
	}
	// Sent off the read loop, like every bounded result, so a slow client
	// never stalls the upstream.
	s.work.Add(1)
	go func() {
		defer s.work.Done()
		if err != nil {
			s.respond(c.id, nil, streamError(err))
			return
		}
		_ = s.down.writeMsg(s.wctx, &wmsg{id: c.id, result: res})
	}()
}

// callKey is the id key of a call.
func callKey(c *call) string { k, _ := idKey(c.id); return k }

// streamError is the JSON-RPC error a streamed call gets when it fails.
func streamError(err error) error {
	if errors.Is(err, errNotBounded) {
		return upstreamBad(&badMessage{why: whyNotBounded})
	}
	return err
}
