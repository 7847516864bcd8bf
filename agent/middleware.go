package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx"
)

// ErrToolFailed wraps the error a tool body returned. The middleware passes
// tool errors through untouched: they are not tool results and are never
// offloaded. errors.Is and errors.As still reach the tool's own error.
var ErrToolFailed = errors.New("tool failed")

// ErrNilOffloader is returned by NewMiddleware for a nil Offloader.
var ErrNilOffloader = errors.New("agent: nil offloader")

// Middleware sends tool results through one Offloader, that is, through the
// host's binding and policy. It is safe for concurrent use.
type Middleware struct {
	off *hybridctx.Offloader
}

// NewMiddleware returns a middleware deciding results with off.
func NewMiddleware(off *hybridctx.Offloader) (*Middleware, error) {
	if off == nil {
		return nil, ErrNilOffloader
	}
	return &Middleware{off: off}, nil
}

// Offloader returns the middleware's offloader.
func (m *Middleware) Offloader() *hybridctx.Offloader { return m.off }

// Call runs tool with args and decides its result. The returned Offload
// holds what the model must see (Offload.Text: the content when inline, the
// bounded reference notice when stored, the categorical notice when failed)
// and the decision for the host. A *hybridctx.Segment result, such as the
// read tool's, is inlined whatever its size (recovered_segment_bypass).
//
// The error wraps hybridctx.ErrInvalidCall, before the tool runs, for a
// call that could not be recorded (hybridctx.Call.Validate); it wraps
// ErrToolFailed when the tool failed (no decision, no event), or is the
// Offloader's error when no decision could be made (a
// cancelled context, a result encoding/json cannot encode).
func (m *Middleware) Call(ctx context.Context, call hybridctx.Call, tool ToolFunc, args json.RawMessage) (*hybridctx.OffloadResult, error) {
	if tool == nil {
		return nil, fmt.Errorf("%w: no tool body", ErrToolFailed)
	}
	if err := call.Validate(); err != nil {
		return nil, err
	}
	result, err := tool(ctx, args)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrToolFailed, err)
	}
	return m.off.Offload(ctx, call, result)
}

// WrappedFunc is a tool wrapped by a Middleware: it takes the call id the
// model gave and returns the decision (see Middleware.Call).
type WrappedFunc func(ctx context.Context, callID string, args json.RawMessage) (*hybridctx.OffloadResult, error)

// Wrap returns tool as a WrappedFunc recording name as the tool name.
func (m *Middleware) Wrap(name string, tool ToolFunc) WrappedFunc {
	return func(ctx context.Context, callID string, args json.RawMessage) (*hybridctx.OffloadResult, error) {
		return m.Call(ctx, hybridctx.Call{Tool: name, ID: callID}, tool, args)
	}
}

// Parts is the decision of one multi-part result (DecideParts).
type Parts struct {
	// Parts holds one decision per part, in order. Unless Whole is set, the
	// model sees Parts[i].Text() in part i's place.
	Parts []*hybridctx.OffloadResult
	// Whole is set when the parts were stored together as one JSON array
	// (each part {"type": "text", "text": …}, in order; a part that is not
	// valid UTF-8 {"type": "binary", "data": …}, base64): the model then
	// sees Whole.Text() alone, in place of every part.
	Whole *hybridctx.OffloadResult
}

// Texts returns what the model sees of the result, part by part (one text
// when the result was stored whole).
func (p *Parts) Texts() []string {
	if p.Whole != nil {
		return []string{p.Whole.Text()}
	}
	out := make([]string, len(p.Parts))
	for i, d := range p.Parts {
		out[i] = d.Text()
	}
	return out
}

// DecideParts decides the parts of one multi-part result (for example the
// content blocks of an MCP tool result) together: each part as Call would,
// then the whole-result bound (hybridctx.Offloader.BoundResult), weighed on
// the parts as the model's API receives them, JSON strings with their
// escapes: the largest inline parts are stored one by one; when what the
// model would see (inline parts and notices together) is still over the
// policy's ResultBound, the parts are stored whole, as one JSON array, and
// Parts.Whole holds that decision (see docs/mcp-proxy.md, "The whole-result
// bound"). The error is the Offloader's when no decision could be made;
// decisions made before it were reported.
func (m *Middleware) DecideParts(ctx context.Context, call hybridctx.Call, parts []any) (*Parts, error) {
	f := &partsForm{off: m.off, call: call, parts: parts, res: &Parts{Parts: make([]*hybridctx.OffloadResult, len(parts))}}
	for i, p := range parts {
		d, err := m.off.Offload(ctx, call, p)
		if err != nil {
			return nil, err
		}
		f.res.Parts[i] = d
	}
	if _, err := m.off.BoundResult(ctx, call, f); err != nil {
		return nil, err
	}
	return f.res, nil
}

// partsForm is a multi-part result being bounded: a hybridctx.BoundForm.
type partsForm struct {
	off   *hybridctx.Offloader
	call  hybridctx.Call
	parts []any
	res   *Parts
}

// Parts implements hybridctx.BoundForm: each part as the model sees it, a
// JSON string.
func (f *partsForm) Parts() []hybridctx.ResultPart {
	out := make([]hybridctx.ResultPart, len(f.parts))
	for i, d := range f.res.Parts {
		typ := "text"
		switch v := f.parts[i].(type) {
		case string:
			if !utf8.ValidString(v) {
				typ = "binary"
			}
		case []byte:
			if !utf8.Valid(v) {
				typ = "binary"
			}
		}
		out[i] = hybridctx.ResultPart{Type: typ, Size: encodedLen(d.Text()) + 1,
			Stored: d.Outcome() != hybridctx.Inline, Fixed: d.Reason() == hybridctx.RecoveredSegmentBypass}
	}
	return out
}

// Sent implements hybridctx.BoundForm.
func (f *partsForm) Sent() (int64, error) {
	if f.res.Whole != nil {
		return encodedLen(f.res.Whole.Text()), nil
	}
	var n int64
	for _, p := range f.Parts() {
		n += p.Size
	}
	return n, nil
}

// StorePart implements hybridctx.BoundForm.
func (f *partsForm) StorePart(ctx context.Context, i int) error {
	d, err := f.off.Store(ctx, f.call, f.parts[i])
	if err != nil {
		return err
	}
	f.res.Parts[i] = d
	return nil
}

// Entry implements hybridctx.BoundForm: a text block holding what the
// model would have seen of the part; a part that is not valid UTF-8 (which
// a JSON string cannot hold exactly) as {"type": "binary", "data": base64}.
func (f *partsForm) Entry(i int) (json.RawMessage, error) {
	var text string
	switch v := f.parts[i].(type) {
	case string:
		text = v
	case []byte:
		text = string(v)
	case json.RawMessage:
		text = string(v)
	case *hybridctx.Segment:
		text = "null"
		if v != nil {
			text = string(v.Bytes())
		}
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("agent: encoding a part: %w", err)
		}
		text = string(b)
	}
	if !utf8.ValidString(text) {
		return json.Marshal(struct {
			Type string `json:"type"`
			Data []byte `json:"data"`
		}{"binary", []byte(text)})
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
}

// Fold implements hybridctx.BoundForm.
func (f *partsForm) Fold(out *hybridctx.OffloadResult, _ []int) error {
	f.res.Whole = out
	return nil
}

// encodedLen is the length of s as a JSON string.
func encodedLen(s string) int64 {
	b, _ := json.Marshal(s)
	return int64(len(b))
}
