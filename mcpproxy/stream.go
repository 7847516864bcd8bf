package mcpproxy

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Streaming large tools/call results from a newline-delimited upstream.
//
// When an upstream line grows past streamAbove bytes inside a content
// block's payload (earlier blocks whole before it) — a text block's "text", or an image or audio
// block's base64 "data", with the message's id and the block's type written
// before it (the order every common server writes) — and the id is a
// forwarded tools/call, the payload is unescaped (and base64-decoded) on the
// fly straight into the offloader's stream: hashed, classified and written
// without ever being held whole. The rest of the message (small by then) is
// read into memory and bounded as usual, with the streamed block already
// decided. Memory stays flat whatever the payload's size; --max-message
// still applies. Any other large line is read whole, as before.
//
// When the id comes after the payload, the rest of the line is spooled to
// a private temporary file (unlinked at once, in Options.TempDir) while a
// constant-memory scanner finds the id; the payload is then streamed from
// the file.
//
// Differences from the whole-message path, all for malformed or unusual
// results: a streamed block whose other fields are themselves over the
// threshold, invalid base64, or a message that turns out not to be valid
// JSON gets a JSON-RPC error instead of a bounded result.

// streamAbove is the line length past which the upstream reader looks for a
// payload to stream. The threshold must be at most streamAbove/8, so that
// the payload (at least streamAbove/6 bytes once unescaped) is always over
// it.
const streamAbove = 1 << 20

// streamBuffer is the read buffer of a streamed payload.
const streamBuffer = 64 << 10

// errLineTooLarge means a streamed line went over the message limit.
var errLineTooLarge = errors.New("mcpproxy: message over the size limit")

// largeHook is called by a lineConn's reader with the first bytes of a long
// line and a reader of the rest of the line. It returns false, having read
// nothing, to let the line be read whole; true when it consumed the line.
type largeHook func(prefix []byte, rest io.Reader) bool

// restReader is what a largeHook's rest is: the rest of one message, failing
// once with errLineTooLarge past the message limit, and drain discarding
// what is left of it in constant memory (a line's rest, or an HTTP body's
// or server-sent event's; see upstream_http_large.go).
type restReader interface {
	io.Reader
	drain()
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

// streamHead is where a streamable payload starts in a line's prefix.
type streamHead struct {
	id    json.RawMessage
	kind  string // "text" or "data"
	index int    // the block's index in content
	body  int    // index of the payload's first byte, after its quote
}

// parseStreamHead recognizes {…"id":…,"result":{…"content":[{…},…,
// {"type":T,…"text"|"data":"… in prefix, with the payload string still open at its end.
func parseStreamHead(prefix []byte) (streamHead, bool) {
	var h streamHead
	p := &headParser{b: prefix}
	if !p.open('{') {
		return h, false
	}
	for {
		key, ok := p.key()
		if !ok {
			return h, false
		}
		if key == "result" {
			break
		}
		v, ok := p.value()
		if !ok {
			return h, false
		}
		if key == "id" {
			h.id = v
		}
	}
	if !p.open('{') { // a nil id: it comes after the result (see spool)
		return h, false
	}
	for {
		key, ok := p.key()
		if !ok {
			return h, false
		}
		if key == "content" {
			break
		}
		if _, ok := p.value(); !ok {
			return h, false
		}
	}
	if !p.open('[') {
		return h, false
	}
	// Earlier blocks are whole in the prefix; the payload is in the first
	// one that is not.
	for ; ; h.index++ {
		if h.index > 0 && !p.open(',') {
			return h, false
		}
		p.i = skipSpace(p.b, p.i)
		if _, ok := p.value(); !ok {
			break
		}
	}
	if !p.open('{') {
		return h, false
	}
	var typ string
	for {
		key, ok := p.key()
		if !ok {
			return h, false
		}
		// The payload key, after the type or before it (the type, checked
		// once the message is whole, must then agree).
		want := map[string]string{"text": "text", "image": "data", "audio": "data"}[typ]
		if want != "" && key == want || typ == "" && (key == "text" || key == "data") {
			h.kind = key
			break
		}
		v, ok := p.value()
		if !ok || key == "text" || key == "data" {
			return h, false
		}
		if key == "type" && json.Unmarshal(v, &typ) != nil {
			return h, false
		}
	}
	p.i = skipSpace(p.b, p.i)
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return h, false
	}
	h.body = p.i + 1
	// The payload must still be open: no closing quote in the prefix.
	if end := skipString(p.b, p.i); end <= len(p.b) && end > p.i && endsString(p.b[h.body:]) {
		return h, false
	}
	return h, true
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

// headParser walks the beginning of a JSON object held in a prefix.
type headParser struct {
	b []byte
	i int
}

// open consumes c and, after an object's '{', nothing else.
func (p *headParser) open(c byte) bool {
	p.i = skipSpace(p.b, p.i)
	if p.i >= len(p.b) || p.b[p.i] != c {
		return false
	}
	p.i++
	return true
}

// key consumes an optional ',' then "key" and ':'.
func (p *headParser) key() (string, bool) {
	p.i = skipSpace(p.b, p.i)
	if p.i < len(p.b) && p.b[p.i] == ',' {
		p.i = skipSpace(p.b, p.i+1)
	}
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	end := skipString(p.b, p.i)
	var k string
	if end >= len(p.b) || json.Unmarshal(p.b[p.i:end], &k) != nil {
		return "", false
	}
	p.i = skipSpace(p.b, end)
	if p.i >= len(p.b) || p.b[p.i] != ':' {
		return "", false
	}
	p.i = skipSpace(p.b, p.i+1)
	return k, true
}

// value consumes one complete value, which must end inside the prefix.
func (p *headParser) value() (json.RawMessage, bool) {
	end := skipValue(p.b, p.i)
	if end >= len(p.b) || end == p.i || !json.Valid(p.b[p.i:end]) {
		return nil, false
	}
	v := p.b[p.i:end]
	p.i = end
	return v, true
}

// streamLarge is the session's largeHook for the upstream side.
func (s *session) streamLarge(prefix []byte, rest io.Reader) bool {
	h, ok := parseStreamHead(prefix)
	if !ok {
		return false
	}
	lr, _ := rest.(restReader)
	body := io.Reader(lr)
	over := false
	if h.id == nil {
		f, err := os.CreateTemp(s.p.tempDir, "hybridctx-mcp-*")
		if err != nil {
			return false // no spool: read whole, as any other line
		}
		_ = os.Remove(f.Name()) // private and never left behind
		defer f.Close()
		if h.id, over, err = spool(f, prefix, lr); err != nil || h.id == nil {
			s.drop(fromUpstream, "a streamed result could not be taken")
			return true
		}
		body = f
	}
	key, ok := idKey(s.clientID(h.id))
	if !ok {
		lr.drain()
		s.drop(fromUpstream, whyID)
		return true
	}
	s.mu.Lock()
	c := s.pending[key]
	_, local := s.local[key]
	s.mu.Unlock()
	switch {
	case c == nil:
		// A response to nothing in progress: dropped, in constant memory.
		why := dropUnknown
		if local {
			why = dropLocal
		}
		s.drop(fromUpstream, why)
		lr.drain()
		return true
	case c.method != methodToolsCall && body == io.Reader(lr):
		return false
	}
	c = s.take(key)
	if c == nil {
		lr.drain()
		return true
	}
	s.p.streamed.Add(1)
	var res json.RawMessage
	err := errLineTooLarge
	if !over {
		if c.method != methodToolsCall {
			err = errNotBounded // spooled, but not a result the proxy bounds
		} else {
			res, err = s.streamResult(c, prefix, h, body)
		}
	}
	c.cancel()
	lr.drain()
	if err != nil {
		s.drop(fromUpstream, whyStream(err))
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
	return true
}

// spool copies the rest of a line whose id comes after its payload to f,
// finding the id on the way, and rewinds f. Past the message limit it
// stops writing but still reads to the end of the line for the id, and
// reports over.
func spool(f *os.File, prefix []byte, lr restReader) (id json.RawMessage, over bool, err error) {
	var sc idScanner
	sc.feed(prefix)
	buf := make([]byte, streamBuffer)
	for {
		n, rerr := lr.Read(buf)
		sc.feed(buf[:n])
		if !over {
			if _, err := f.Write(buf[:n]); err != nil {
				lr.drain()
				return nil, false, err
			}
		}
		switch {
		case errors.Is(rerr, errLineTooLarge):
			over = true
		case errors.Is(rerr, io.EOF):
			_, err := f.Seek(0, io.SeekStart)
			return sc.id, over, err
		case rerr != nil:
			return nil, false, rerr
		}
	}
}

// streamResult offloads the streamed payload, then bounds the rest of the
// message with that block decided.
func (s *session) streamResult(c *call, prefix []byte, h streamHead, rest io.Reader) (json.RawMessage, error) {
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(prefix[h.body:]), rest), streamBuffer)
	sr := &strReader{br: br}
	var payload io.Reader = sr
	if h.kind == "data" {
		payload = newB64Reader(sr)
	}
	b := &s.p.bound
	call := offloadCall(c.tool, c.id)
	ctx := withReporter(c.ctx, b.reporter)
	out, err := b.off.OffloadReader(ctx, call, payload)
	if err != nil {
		return nil, err
	}
	if !sr.done {
		return nil, errBadString // base64 ended before the string did
	}
	tail, err := io.ReadAll(br)
	if err != nil {
		return nil, err
	}
	whole := make([]byte, 0, h.body+1+len(tail))
	whole = append(append(append(whole, prefix[:h.body]...), '"'), tail...)
	m, err := parseMessage(whole)
	if err != nil {
		return nil, errBadString
	}
	if k, _ := idKey(s.clientID(m.id)); m.isCall() || m.err != nil || k != callKey(c) {
		return nil, errBadString
	}
	var fields map[string]json.RawMessage
	var blocks []json.RawMessage
	if json.Unmarshal(m.result, &fields) != nil || json.Unmarshal(fields["content"], &blocks) != nil || len(blocks) <= h.index {
		return nil, errBadString
	}
	blk := blocks[h.index]
	_, mime, ann, payloadKey := wirePayload(blk)
	if payloadKey != map[string]string{"text": "text", "data": "data"}[h.kind] || restSize(blk, payloadKey) > b.threshold() {
		return nil, errNotBounded
	}
	repl, ref := b.outcomeBlocks(out, mime, ann)
	return b.boundWireWith(ctx, call, m.result, map[int]decided{h.index: {repl: repl, ref: ref}})
}

// callKey is the id key of a call.
func callKey(c *call) string { k, _ := idKey(c.id); return k }

// errNotBounded means a streamed block's other fields are themselves over
// the threshold (the whole block would have to be decided on its JSON).
var errNotBounded = errors.New("mcpproxy: streamed block not boundable")

// streamError is the JSON-RPC error a streamed call gets when it fails.
func streamError(err error) error {
	switch {
	case errors.Is(err, errLineTooLarge):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the upstream's response exceeds the message size limit"}
	case errors.Is(err, errNotBounded):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the upstream's result could not be bounded"}
	case errors.Is(err, errBadString), errors.As(err, new(base64.CorruptInputError)):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the upstream's response was not a valid JSON-RPC message"}
	}
	return err
}

// whyStream is the drop reason logged for a failed streamed call.
func whyStream(err error) string {
	if errors.Is(err, errLineTooLarge) {
		return whyTooLarge
	}
	return "a streamed result could not be taken"
}
