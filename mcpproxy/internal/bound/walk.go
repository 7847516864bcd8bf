package bound

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/jsonstream"
	"github.com/hybridctx/hybridctx/mcpblock"
)

// Bounding large tools/call results as they are read.
//
// A long upstream line that answers a forwarded tools/call (mcpproxy's
// stream.go) is bounded while it is read. The result is walked as JSON
// (fields in any order): every payload the bounder decides on its own,
// when its JSON text is longer than window bytes, goes straight into the offloader's stream (hashed,
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
// are byte for byte the ones the whole message gives (mcpproxy's
// FuzzStreamedResult). window is six times the threshold, so that a
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

// StreamBuffer is the read buffer of a streamed payload.
const StreamBuffer = 64 << 10

// MaxWindow bounds the look-ahead that tells a short payload from one to
// stream: with a larger threshold, payloads are read into the skeleton. A
// walk reads through a buffer of at most MaxWindow + StreamBuffer bytes.
const MaxWindow = 1 << 20

// Walk bounds one tools/call result as it is read: Read walks the result,
// streaming every long payload into the offloader, then Finish bounds what
// is left with those payloads decided (see the top of this file).
type Walk struct {
	b      *Bounder
	ctx    context.Context
	call   hybridctx.Call
	j      *jsonstream.Reader
	skel   jsonstream.Buf
	items  []streamedItem
	window int // 0: nothing is streamed
	nonce  string
}

// streamedItem is one payload streamed into the offloader.
type streamedItem struct {
	token string // its place in the skeleton: a JSON string's content, valid base64 too
	kind  itemKind
	out   *hybridctx.OffloadResult
}

type itemKind uint8

const (
	itemText itemKind = iota // a JSON string, unescaped
	itemB64                  // a JSON string, unescaped and base64-decoded
	itemJSON                 // a JSON value as written (structuredContent)
)

// preStructured is the key of structuredContent in boundWireWith's pre.
const preStructured = -1

// NewWalk starts the walk of a result for call, its tokens made with nonce.
func (b *Bounder) NewWalk(ctx context.Context, call hybridctx.Call, nonce string) *Walk {
	pol := b.Off.Policy()
	t := pol.InlineThreshold
	if n, ok := pol.ToolThresholds[call.Tool]; ok {
		t = n
	}
	w := &Walk{b: b, ctx: WithReporter(ctx, b.Reporter), call: call, nonce: nonce}
	if t >= 0 && t <= (MaxWindow-64)/6 {
		w.window = int(6*t + 64)
	}
	return w
}

// ReadSize is the read buffer a walk needs.
func (w *Walk) ReadSize() int { return w.window + StreamBuffer }

// Read reads the result value at j into the skeleton, streaming payloads.
func (w *Walk) Read(j *jsonstream.Reader) error {
	w.j = j
	c, err := j.Next(&w.skel)
	if err != nil {
		return err
	}
	if c != '{' {
		return j.Value(&w.skel)
	}
	return j.Members(&w.skel, func(key string) error {
		switch key {
		case "content":
			c, err := j.Next(&w.skel)
			switch {
			case err != nil:
				return err
			case c != '[':
				return j.Value(&w.skel)
			}
			return j.Elements(&w.skel, func(int) error {
				c, err := j.Next(&w.skel)
				switch {
				case err != nil:
					return err
				case c != '{':
					return j.Value(&w.skel)
				}
				return w.block()
			})
		case "structuredContent":
			return w.structured()
		}
		return j.Value(&w.skel)
	}, true)
}

// block walks a content block.
func (w *Walk) block() error {
	j := w.j
	typ := ""
	return j.Members(&w.skel, func(key string) error {
		c, err := j.Next(&w.skel)
		if err != nil {
			return err
		}
		switch {
		case key == "type" && c == '"':
			v, err := j.Small(&w.skel)
			if err == nil {
				err = json.Unmarshal(v, &typ)
			}
			return err
		case c == '"':
			if p, ok := mcpblock.Member(typ, "", key); ok {
				return w.payload(kindOf(p))
			}
		case c == '{' && mcpblock.Holds(typ, key):
			return j.Members(&w.skel, func(k string) error {
				c, err := j.Next(&w.skel)
				if err != nil {
					return err
				}
				if p, ok := mcpblock.Member(typ, key, k); ok && c == '"' {
					return w.payload(kindOf(p))
				}
				return j.Value(&w.skel)
			}, true)
		}
		return j.Value(&w.skel)
	}, true)
}

// kindOf returns how a payload of the rule's row p is streamed.
func kindOf(p mcpblock.Payload) itemKind {
	if p.Base64 {
		return itemB64
	}
	return itemText
}

// short reports whether the value at the reader ends within the window.
func (w *Walk) short(str bool) bool {
	if w.window == 0 {
		return true
	}
	win, _ := w.j.Buffered().Peek(w.window + 1)
	if str {
		return len(win) > 0 && endsString(win[1:])
	}
	var t jsonstream.Tokenizer
	t.Watch(jsonstream.StopValueEnd, 0)
	n, ev := t.Scan(win)
	return ev == jsonstream.ValueEnd && n < len(win)
}

// token places the next item's token in the skeleton: valid base64, and
// padded with a letter, never a digit, so that item 1's token never equals
// item 10's.
func (w *Walk) token() string {
	t := "hybridctxStreamed" + w.nonce + strconv.Itoa(len(w.items))
	for len(t)%4 != 0 {
		t += "Z"
	}
	w.skel = append(append(append(w.skel, '"'), t...), '"')
	return t
}

// payload streams the string at the reader into the offloader, or copies a
// short one into the skeleton.
func (w *Walk) payload(kind itemKind) error {
	if w.short(true) {
		return w.j.Str(&w.skel)
	}
	_, _ = w.j.Buffered().Discard(1) // the opening quote
	tok := w.token()
	sr := jsonstream.NewStringReader(w.j.Buffered())
	var r io.Reader = sr
	if kind == itemB64 {
		r = jsonstream.NewB64Reader(sr, StreamBuffer)
	}
	out, err := w.b.Off.OffloadReader(w.ctx, w.call, r)
	if err != nil {
		return err
	}
	// The rest of the string, when the decision stopped reading early.
	if _, err := io.Copy(io.Discard, sr); err != nil {
		return err
	}
	w.b.decided(out)
	w.items = append(w.items, streamedItem{token: tok, kind: kind, out: out})
	return nil
}

// structured streams a long structuredContent object or array into the
// offloader as written, or copies a short one into the skeleton.
func (w *Walk) structured() error {
	j := w.j
	c, err := j.Next(&w.skel)
	if err != nil {
		return err
	}
	if c != '{' && c != '[' || w.short(false) {
		return j.Value(&w.skel)
	}
	tok := w.token()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(pw, StreamBuffer)
		err := j.Value(bw)
		if err == nil {
			err = bw.Flush()
		}
		_ = pw.CloseWithError(err)
		done <- err
	}()
	out, err := w.b.Off.OffloadReader(w.ctx, w.call, pr)
	_, _ = io.Copy(io.Discard, pr) // the rest, when the decision stopped early
	if perr := <-done; perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	w.b.decided(out)
	w.items = append(w.items, streamedItem{token: tok, kind: itemJSON, out: out})
	return nil
}

// Finish bounds the skeleton with the streamed payloads decided, or fails
// with ErrNotBounded when the whole-message code would read the result
// otherwise than it was streamed.
func (w *Walk) Finish() (json.RawMessage, error) {
	skel := json.RawMessage(w.skel)
	var fields map[string]json.RawMessage
	var blocks []json.RawMessage
	if json.Unmarshal(skel, &fields) != nil || fields == nil {
		return nil, ErrNotBounded
	}
	if c, ok := fields["content"]; ok && !jsonstream.IsNull(c) && json.Unmarshal(c, &blocks) != nil {
		return nil, ErrNotBounded
	}
	pre := map[int]decided{}
	for i, blk := range blocks {
		payload, mime, ann, key := wirePayload(blk)
		it := w.match(payload)
		if it == nil {
			continue
		}
		repl, ref := w.b.outcomeBlocks(it.out, mime, ann)
		if repl == nil || restSize(blk, key) > w.b.threshold() {
			return nil, ErrNotBounded
		}
		pre[i] = decided{repl: repl, ref: ref, out: it.out, token: it.token}
	}
	if sc, ok := fields["structuredContent"]; ok {
		if it := w.match(sc); it != nil {
			repl, ref := w.b.outcomeBlocks(it.out, mimeJSON, nil)
			pre[preStructured] = decided{repl: repl, ref: ref, out: it.out, token: it.token}
		}
	}
	if len(pre) != len(w.items) {
		return nil, ErrNotBounded
	}
	return w.b.boundWireWith(w.ctx, w.call, skel, pre)
}

// match returns the item whose token is payload, read as the whole-message
// code reads it: a string (text), decoded bytes (base64) or a JSON value
// (structuredContent).
func (w *Walk) match(payload any) *streamedItem {
	for i := range w.items {
		it := &w.items[i]
		switch p := payload.(type) {
		case string:
			if it.kind == itemText && p == it.token {
				return it
			}
		case []byte:
			if d, err := base64.StdEncoding.DecodeString(it.token); it.kind == itemB64 && err == nil && string(p) == string(d) {
				return it
			}
		case json.RawMessage:
			if it.kind == itemJSON && string(p) == `"`+it.token+`"` {
				return it
			}
		}
	}
	return nil
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

// NewNonce returns the random part of the tokens that stand for streamed
// payloads.
func NewNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ErrNotBounded means a streamed result cannot be bounded as the whole
// message would be (see the top of this file).
var ErrNotBounded = errors.New("mcpproxy: streamed result not boundable")
