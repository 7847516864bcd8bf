package mcpproxy

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

// resultWalk bounds one tools/call result as it is read (see stream.go).
type resultWalk struct {
	b      *bounder
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

// newResultWalk starts the walk of a result for the call c.
func (s *session) newResultWalk(c *call) *resultWalk {
	b := &s.p.bound
	call := offloadCall(c.tool, c.id)
	pol := b.off.Policy()
	t := pol.InlineThreshold
	if n, ok := pol.ToolThresholds[call.Tool]; ok {
		t = n
	}
	w := &resultWalk{b: b, ctx: withReporter(c.ctx, b.reporter), call: call, nonce: s.p.nonce}
	if t >= 0 && t <= (maxWindow-64)/6 {
		w.window = int(6*t + 64)
	}
	return w
}

// readSize is the read buffer a walk needs.
func (w *resultWalk) readSize() int { return w.window + streamBuffer }

// walk reads the result value at j into the skeleton, streaming payloads.
func (w *resultWalk) walk(j *jsonstream.Reader) error {
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
func (w *resultWalk) block() error {
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
func (w *resultWalk) short(str bool) bool {
	if w.window == 0 {
		return true
	}
	win, _ := w.j.Buffered().Peek(w.window + 1)
	if str {
		return len(win) > 0 && endsString(win[1:])
	}
	return skipValue(win, 0) < len(win)
}

// token places the next item's token in the skeleton.
func (w *resultWalk) token() string {
	t := "hybridctxStreamed" + w.nonce + strconv.Itoa(len(w.items))
	for len(t)%4 != 0 {
		t += "0"
	}
	w.skel = append(append(append(w.skel, '"'), t...), '"')
	return t
}

// payload streams the string at the reader into the offloader, or copies a
// short one into the skeleton.
func (w *resultWalk) payload(kind itemKind) error {
	if w.short(true) {
		return w.j.Str(&w.skel)
	}
	_, _ = w.j.Buffered().Discard(1) // the opening quote
	tok := w.token()
	sr := jsonstream.NewStringReader(w.j.Buffered())
	var r io.Reader = sr
	if kind == itemB64 {
		r = jsonstream.NewB64Reader(sr, streamBuffer)
	}
	out, err := w.b.off.OffloadReader(w.ctx, w.call, r)
	if err != nil {
		return err
	}
	// The rest of the string, when the decision stopped reading early.
	if _, err := io.Copy(io.Discard, sr); err != nil {
		return err
	}
	w.items = append(w.items, streamedItem{token: tok, kind: kind, out: out})
	return nil
}

// structured streams a long structuredContent object or array into the
// offloader as written, or copies a short one into the skeleton.
func (w *resultWalk) structured() error {
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
		bw := bufio.NewWriterSize(pw, streamBuffer)
		err := j.Value(bw)
		if err == nil {
			err = bw.Flush()
		}
		_ = pw.CloseWithError(err)
		done <- err
	}()
	out, err := w.b.off.OffloadReader(w.ctx, w.call, pr)
	_, _ = io.Copy(io.Discard, pr) // the rest, when the decision stopped early
	if perr := <-done; perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	w.items = append(w.items, streamedItem{token: tok, kind: itemJSON, out: out})
	return nil
}

// finish bounds the skeleton with the streamed payloads decided, or fails
// with errNotBounded when the whole-message code would read the result
// otherwise than it was streamed.
func (w *resultWalk) finish() (json.RawMessage, error) {
	skel := json.RawMessage(w.skel)
	var fields map[string]json.RawMessage
	var blocks []json.RawMessage
	if json.Unmarshal(skel, &fields) != nil || fields == nil {
		return nil, errNotBounded
	}
	if c, ok := fields["content"]; ok && !isNull(c) && json.Unmarshal(c, &blocks) != nil {
		return nil, errNotBounded
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
			return nil, errNotBounded
		}
		pre[i] = decided{repl: repl, ref: ref}
	}
	if sc, ok := fields["structuredContent"]; ok {
		if it := w.match(sc); it != nil {
			repl, ref := w.b.outcomeBlocks(it.out, mimeJSON, nil)
			pre[preStructured] = decided{repl: repl, ref: ref}
		}
	}
	if len(pre) != len(w.items) {
		return nil, errNotBounded
	}
	return w.b.boundWireWith(w.ctx, w.call, skel, pre)
}

// match returns the item whose token is payload, read as the whole-message
// code reads it: a string (text), decoded bytes (base64) or a JSON value
// (structuredContent).
func (w *resultWalk) match(payload any) *streamedItem {
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

// newNonce returns the random part of the proxy's tokens.
func newNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// errNotBounded means a streamed result cannot be bounded as the whole
// message would be (see stream.go).
var errNotBounded = errors.New("mcpproxy: streamed result not boundable")
