package bound

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/jsonstream"
)

// A tools/call result as the whole-result bound sees it.
//
// Every path of the proxy (wire results, typed results of the Middleware,
// results bounded as they stream, and adapters/mcpgo through BoundResult)
// ends here: each block, structuredContent and the other members are
// decided on their own first, then hybridctx.Offloader.BoundResult, the one
// place the whole-result rule is written, weighs the result as encoded for
// the client through wireForm (see docs/mcp-proxy.md, "The whole-result
// bound").

// Wire bounds a tools/call result as it came over the wire. Every key
// it does not rewrite is kept; when nothing was stored, failed or folded it
// returns result itself.
func (b *Bounder) Wire(ctx context.Context, call hybridctx.Call, result json.RawMessage) (json.RawMessage, error) {
	return b.boundWireWith(ctx, call, result, nil)
}

// decided is a payload decided before boundWireWith runs (streamed into the
// offloader): what takes its place (nil: it stays inline), its stored
// reference, the decision, and the token that stands for it in the
// skeleton.
type decided struct {
	repl  []mcp.Content
	ref   artifact.Ref
	out   *hybridctx.OffloadResult
	token string
}

// wirePart is one part of a result on the wire, as it stands.
type wirePart struct {
	typ    string
	raw    json.RawMessage   // a content block, structuredContent's value, or the other members as one object
	repl   []json.RawMessage // nil: inline; else what takes its place
	ref    artifact.Ref      // the reference it was stored under, if any
	gone   *decided          // streamed: its payload is in the workspace only
	member bool              // outside the content
	folded bool
}

// wireForm is a result on the wire being bounded: a hybridctx.BoundForm.
type wireForm struct {
	b       *Bounder
	call    hybridctx.Call
	orig    json.RawMessage
	fields  map[string]json.RawMessage // the members kept as they are (protocol keys)
	parts   []wirePart
	nBlocks int
	sc, mem int // the indexes of structuredContent and the other members; -1: none
	hasList bool
	refs    map[artifact.Ref]bool
	fold    []json.RawMessage
	changed bool
}

// boundWireWith is Wire with the payloads in pre already decided: the
// content blocks at its indexes, and structuredContent at preStructured.
func (b *Bounder) boundWireWith(ctx context.Context, call hybridctx.Call, result json.RawMessage, pre map[int]decided) (json.RawMessage, error) {
	ctx = WithReporter(ctx, b.Reporter)
	fields, err := objectFields(result)
	if err != nil {
		// Not an object: decide on the whole result so nothing unbounded
		// passes.
		return b.boundOpaque(ctx, call, result)
	}
	var blocks []json.RawMessage
	c, hasList := fields["content"]
	if hasList && !jsonstream.IsNull(c) {
		if err := json.Unmarshal(c, &blocks); err != nil {
			return b.boundOpaque(ctx, call, result)
		}
	}
	delete(fields, "content")
	f := &wireForm{b: b, call: call, orig: result, fields: fields, nBlocks: len(blocks), sc: -1, mem: -1,
		hasList: hasList, refs: map[artifact.Ref]bool{}}
	for i, raw := range blocks {
		p := wirePart{typ: blockType(raw), raw: raw}
		if d, ok := pre[i]; ok {
			p.gone = &d
			if err := f.set(&p, d.repl, d.ref); err != nil {
				return nil, err
			}
		} else {
			repl, ref, err := b.decideWire(ctx, call, raw, false)
			if err == nil {
				err = f.set(&p, repl, ref)
			}
			if err != nil {
				return nil, err
			}
		}
		f.parts = append(f.parts, p)
	}
	if sc, ok := fields["structuredContent"]; ok && !jsonstream.IsNull(sc) {
		delete(fields, "structuredContent")
		p := wirePart{typ: hybridctx.PartStructured, raw: sc, member: true}
		d, streamed := pre[preStructured]
		repl, ref := d.repl, d.ref
		if streamed {
			p.gone = &d
		} else {
			var err error
			if repl, ref, err = b.replace(ctx, call, sc, mimeJSON, nil); err != nil {
				return nil, err
			}
		}
		if err := f.set(&p, repl, ref); err != nil {
			return nil, err
		}
		f.sc = len(f.parts)
		f.parts = append(f.parts, p)
	}
	if rest, keys := extras(fields); len(keys) > 0 {
		for _, k := range keys {
			delete(fields, k)
		}
		p := wirePart{typ: hybridctx.PartMembers, raw: rest, member: true}
		if int64(len(rest)) > b.threshold() {
			repl, ref, err := b.replace(ctx, call, rest, mimeJSON, nil)
			if err == nil {
				err = f.set(&p, repl, ref)
			}
			if err != nil {
				return nil, err
			}
		}
		f.mem = len(f.parts)
		f.parts = append(f.parts, p)
	}
	out, err := b.Off.BoundResult(ctx, call, f)
	if err != nil {
		return nil, err
	}
	if out != nil {
		b.decided(out)
	}
	if !f.changed {
		return result, nil
	}
	return f.encode()
}

// set records what takes part p's place (nil: it stays inline). A part
// outside the content stored under a reference the result already shows
// leaves nothing behind.
func (f *wireForm) set(p *wirePart, repl []mcp.Content, ref artifact.Ref) error {
	if repl == nil {
		return nil
	}
	f.changed = true
	p.ref = ref
	p.repl = []json.RawMessage{}
	if !ref.IsZero() && f.refs[ref] && p.member {
		return nil
	}
	if !ref.IsZero() {
		f.refs[ref] = true
	}
	var err error
	p.repl, err = appendEncoded(p.repl, repl)
	return err
}

// blockType returns the "type" of a block on the wire.
func blockType(raw json.RawMessage) string {
	var w struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &w)
	return w.Type
}

// Parts implements hybridctx.BoundForm.
func (f *wireForm) Parts() []hybridctx.ResultPart {
	out := make([]hybridctx.ResultPart, len(f.parts))
	for i, p := range f.parts {
		rp := hybridctx.ResultPart{Type: p.typ, Member: i >= f.nBlocks, Stored: p.repl != nil, Gone: p.gone != nil}
		switch {
		case p.folded:
		case p.repl != nil:
			for _, r := range p.repl {
				rp.Size += int64(len(r)) + 1
			}
		case i == f.sc:
			rp.Size = int64(len(p.raw)) + int64(len(`,"structuredContent":`))
		default:
			rp.Size = int64(len(p.raw)) + 1
		}
		out[i] = rp
	}
	return out
}

// Sent implements hybridctx.BoundForm.
func (f *wireForm) Sent() (int64, error) {
	if !f.changed {
		return int64(len(f.orig)), nil
	}
	b, err := f.encode()
	return int64(len(b)), err
}

// StorePart implements hybridctx.BoundForm.
func (f *wireForm) StorePart(ctx context.Context, i int) error {
	p := &f.parts[i]
	var repl []mcp.Content
	var ref artifact.Ref
	var err error
	if i < f.nBlocks {
		repl, ref, err = f.b.decideWire(ctx, f.call, p.raw, true)
	} else {
		repl, ref, err = f.b.decide(ctx, f.call, p.raw, mimeJSON, nil, true)
	}
	if err != nil {
		return err
	}
	return f.set(p, repl, ref)
}

// Entry implements hybridctx.BoundForm: a part's original, or, for a
// payload streamed into the workspace, the part with its reference in the
// payload's place.
func (f *wireForm) Entry(i int) (json.RawMessage, error) {
	p := f.parts[i]
	switch {
	case i < f.nBlocks && p.gone != nil:
		return bytes.Replace(p.raw, []byte(`"`+p.gone.token+`"`), refEntry(p.gone.out), 1), nil
	case i < f.nBlocks:
		return p.raw, nil
	case i == f.sc:
		v := p.raw
		if p.gone != nil {
			v = refEntry(p.gone.out)
		}
		return concat(`{"type":"`+hybridctx.PartStructured+`","structuredContent":`, v, `}`), nil
	}
	return concat(`{"type":"`+hybridctx.PartMembers+`","members":`, p.raw, `}`), nil
}

// refEntry is what stands for a payload streamed into the workspace in a
// fold's entry: {"reference", "size"}, or the categorical notice when it
// could not be stored.
func refEntry(out *hybridctx.OffloadResult) json.RawMessage {
	if oc := out.Outcome(); oc != hybridctx.Offloaded && oc != hybridctx.ExistingReference {
		b, _ := json.Marshal(map[string]string{"notice": out.Notice})
		return b
	}
	size, _ := out.Diagnostics().ObservedBytes()
	return json.RawMessage(`{"reference":"` + out.Ref.String() + `","size":` + strconv.FormatInt(size, 10) + `}`)
}

func concat(a string, v json.RawMessage, b string) json.RawMessage {
	out := make([]byte, 0, len(a)+len(v)+len(b))
	return append(append(append(out, a...), v...), b...)
}

// Fold implements hybridctx.BoundForm.
func (f *wireForm) Fold(out *hybridctx.OffloadResult, folded []int) error {
	repl, _ := f.b.outcomeBlocks(out, mimeJSON, nil)
	var err error
	if f.fold, err = appendEncoded(nil, repl); err != nil {
		return err
	}
	for _, i := range folded {
		f.parts[i].folded = true
	}
	f.changed = true
	return nil
}

// encode returns the result as it stands: the fold's blocks first, then
// each part inline or what takes its place, the kept members as they came.
func (f *wireForm) encode() (json.RawMessage, error) {
	fields := make(map[string]json.RawMessage, len(f.fields)+4)
	for k, v := range f.fields {
		fields[k] = v
	}
	content := append(make([]json.RawMessage, 0, len(f.parts)+len(f.fold)), f.fold...)
	for i, p := range f.parts {
		switch {
		case p.folded:
		case p.repl != nil:
			content = append(content, p.repl...)
		case i < f.nBlocks:
			content = append(content, p.raw)
		case i == f.sc:
			fields["structuredContent"] = p.raw
		default:
			var rest map[string]json.RawMessage
			if err := json.Unmarshal(p.raw, &rest); err != nil {
				return nil, err
			}
			for k, v := range rest {
				fields[k] = v
			}
		}
	}
	if len(content) > 0 || f.hasList {
		raw, err := marshalAsIs(content)
		if err != nil {
			return nil, err
		}
		fields["content"] = raw
	}
	return marshalAsIs(fields)
}

// marshalAsIs encodes v as encoding/json does, except that the JSON it
// holds keeps its <, > and & as they came, never escaped to \u003c (six
// bytes for one).
func marshalAsIs(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Encoded bounds a result encoded in process (Middleware,
// BoundResult) as the proxy bounds a long line: read once, every payload
// over six times the threshold going into the offloader as it is read
// (stream.go), the rest then bounded as on the wire; the answer is the
// wire one (FuzzStreamedResult), except that a fold names those payloads
// by reference. A result the walk cannot bound as it read it is bounded
// whole. It returns result itself when nothing changed.
func (b *Bounder) Encoded(ctx context.Context, call hybridctx.Call, result json.RawMessage) (json.RawMessage, error) {
	nonce := b.Nonce
	if nonce == "" {
		nonce = NewNonce()
	}
	w := b.NewWalk(ctx, call, nonce)
	if w.window == 0 || len(result) <= w.window {
		return b.Wire(ctx, call, result)
	}
	err := w.Read(jsonstream.NewReader(bufio.NewReaderSize(bytes.NewReader(result), w.ReadSize()), 1))
	if err == nil && len(w.items) == 0 {
		return b.Wire(ctx, call, result)
	}
	if err == nil {
		out, err := w.Finish()
		if err == nil || !errors.Is(err, ErrNotBounded) {
			return out, err
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return b.Wire(ctx, call, result)
}
