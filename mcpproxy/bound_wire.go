package mcpproxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpblock"
)

// Wire results (the proxy).

// wirePayload returns what is decided for one block on the wire, like
// typedPayload: the payload as the rule in package mcpblock names it (a
// base64 one decoded), its MIME type, the block's annotations and the key
// of the block that holds the payload ("" when the payload is the whole
// block).
func wirePayload(raw json.RawMessage) (payload any, mime string, ann *mcp.Annotations, key string) {
	var fields map[string]json.RawMessage
	var typ string
	if json.Unmarshal(raw, &fields) != nil || json.Unmarshal(fields["type"], &typ) != nil {
		return raw, mimeJSON, nil, ""
	}
	inner := map[string]map[string]json.RawMessage{"": fields}
	get := func(in, f string) (any, bool) {
		obj, ok := inner[in]
		if !ok {
			_ = json.Unmarshal(fields[in], &obj) // not an object: no members
			inner[in] = obj
		}
		var s string
		if v := obj[f]; len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil, false
		}
		return s, true
	}
	p, v, mime, ok := mcpblock.Find(typ, get)
	if !ok || (fields["annotations"] != nil && json.Unmarshal(fields["annotations"], &ann) != nil) {
		return raw, mimeJSON, nil, ""
	}
	payload = v
	if p.Base64 {
		b, err := base64.StdEncoding.DecodeString(v.(string))
		if err != nil {
			return raw, mimeJSON, nil, ""
		}
		payload = b
	}
	key = p.Field
	if p.In != "" {
		key = p.In
	}
	return payload, mime, ann, key
}

// decideWire decides one block on the wire: on its payload, unless the rest
// of the block is itself over the threshold, then on the whole block.
func (b *bounder) decideWire(ctx context.Context, call hybridctx.Call, raw json.RawMessage) ([]mcp.Content, artifact.Ref, error) {
	payload, mime, ann, key := wirePayload(raw)
	if key != "" && int64(len(raw)) > b.threshold() && restSize(raw, key) > b.threshold() {
		payload, mime, ann = raw, mimeJSON, nil
	}
	return b.replace(ctx, call, payload, mime, ann)
}

// restSize is the JSON size of a block without its payload key.
func restSize(raw json.RawMessage, key string) int64 {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return int64(len(raw))
	}
	delete(fields, key)
	b, err := json.Marshal(fields)
	if err != nil {
		return int64(len(raw))
	}
	return int64(len(b))
}

// protocolKeys are the tools/call result keys the bounder decides itself or
// must keep for the protocol; every other key (_meta, unknown ones) is
// decided together, when together they are over the threshold.
var protocolKeys = map[string]bool{"content": true, "structuredContent": true, "isError": true,
	"resultType": true, "inputRequests": true, "requestState": true}

// boundWire bounds a tools/call result as it came over the wire. Every key
// it does not rewrite is kept byte for byte; when nothing was stored or
// failed it returns result itself.
func (b *bounder) boundWire(ctx context.Context, call hybridctx.Call, result json.RawMessage) (json.RawMessage, error) {
	return b.boundWireWith(ctx, call, result, nil)
}

// decided is a content block decided before boundWireWith runs (a payload
// streamed into the offloader): its replacement (nil: it stays inline) and
// stored reference.
type decided struct {
	repl []mcp.Content
	ref  artifact.Ref
}

// boundWireWith is boundWire with the blocks at the indexes of pre (and
// structuredContent, at preStructured) already decided.
func (b *bounder) boundWireWith(ctx context.Context, call hybridctx.Call, result json.RawMessage, pre map[int]decided) (json.RawMessage, error) {
	ctx = withReporter(ctx, b.reporter)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(result, &fields); err != nil || fields == nil {
		// Not an object: decide on the whole result so nothing unbounded
		// passes.
		return b.boundOpaque(ctx, call, result)
	}
	var blocks []json.RawMessage
	if c, ok := fields["content"]; ok && !isNull(c) {
		if err := json.Unmarshal(c, &blocks); err != nil {
			return b.boundOpaque(ctx, call, result)
		}
	}
	changed := false
	refs := map[artifact.Ref]bool{}
	out := make([]json.RawMessage, 0, len(blocks)+2)
	add := func(repl []mcp.Content, ref artifact.Ref) error {
		changed = true
		if !ref.IsZero() && refs[ref] {
			return nil
		}
		refs[ref] = true
		var err error
		out, err = appendEncoded(out, repl)
		return err
	}
	blockOut, blockChanged, err := b.boundWireBlocks(ctx, call, blocks, refs, pre)
	if err != nil {
		return nil, err
	}
	out, changed = append(out, blockOut...), blockChanged
	nBlockOut := len(out)
	if sc, ok := fields["structuredContent"]; ok && !isNull(sc) {
		d, streamed := pre[preStructured]
		repl, ref := d.repl, d.ref
		if !streamed {
			var err error
			if repl, ref, err = b.replace(ctx, call, sc, mimeJSON, nil); err != nil {
				return nil, err
			}
		}
		if repl != nil {
			delete(fields, "structuredContent")
			if err := add(repl, ref); err != nil {
				return nil, err
			}
		}
	}
	if rest, keys := extras(fields); int64(len(rest)) > b.threshold() {
		repl, ref, err := b.replace(ctx, call, rest, mimeJSON, nil)
		if err != nil {
			return nil, err
		}
		if repl != nil {
			for _, k := range keys {
				delete(fields, k)
			}
			if err := add(repl, ref); err != nil {
				return nil, err
			}
		}
	}
	if !changed && !b.off.Policy().SendsOverResultBound(int64(len(result))) {
		return result, nil
	}
	content, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	orig := fields["content"]
	fields["content"] = content
	res, err := json.Marshal(fields)
	if err != nil || len(blocks) < 2 || !b.off.Policy().SendsOverResultBound(int64(len(res))) {
		if !changed {
			return result, err
		}
		return res, err
	}
	// Still over the bound, notices and links included: the original
	// content array is stored whole (see docs/mcp-proxy.md). A single
	// block's notice and link are already the smallest form.
	whole, err := b.storeWhole(ctx, call, orig, wireTypes(blocks), pre)
	if err != nil {
		return nil, err
	}
	if whole == nil {
		return res, nil
	}
	if fields["content"], err = json.Marshal(append(whole, out[nBlockOut:]...)); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}

// storeWhole stores a result's original content array as one JSON artifact
// and returns what takes the array's place: the whole-result notice and a
// resource_link (the categorical notice alone when the store failed). It
// returns nil when the array holds payloads streamed into the workspace
// (pre), which it cannot rebuild: that result keeps its per-block bounding.
func (b *bounder) storeWhole(ctx context.Context, call hybridctx.Call, content json.RawMessage, types []string, pre map[int]decided) ([]json.RawMessage, error) {
	if streamedBlocks(pre) || b.perBlockOnly {
		return nil, nil
	}
	out, err := b.off.StoreResult(ctx, call, bytes.NewReader(content), types)
	if err != nil {
		return nil, err
	}
	repl, _ := b.outcomeBlocks(out, mimeJSON, nil)
	return appendEncoded(nil, repl)
}

// streamedBlocks reports whether pre holds a content block (streamed into
// the workspace).
func streamedBlocks(pre map[int]decided) bool {
	for i := range pre {
		if i != preStructured {
			return true
		}
	}
	return false
}

// minReplacement is fewer bytes than the notice and resource_link of any
// stored block take on the wire.
const minReplacement = 400

// storedWholeAnyway reports whether a result whose blocks have the inline
// sizes (negative: replaced already) would still be over the whole-result
// bound after storing the blocks at over, counting each replaced block's
// notice and link as minReplacement bytes: the result is then stored whole,
// and storing those blocks one by one first would be wasted.
func (b *bounder) storedWholeAnyway(sizes []int64, over []int) bool {
	if len(over) == 0 || len(sizes) < 2 {
		return false
	}
	var sent int64
	for _, n := range sizes {
		if n < 0 {
			n = minReplacement
		}
		sent += n
	}
	for _, i := range over {
		sent += minReplacement - sizes[i]
	}
	return b.off.Policy().SendsOverResultBound(sent)
}

// wireTypes returns the "type" of each block on the wire.
func wireTypes(blocks []json.RawMessage) []string {
	types := make([]string, len(blocks))
	for i, raw := range blocks {
		var w struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(raw, &w)
		types[i] = w.Type
	}
	return types
}

// boundWireBlocks decides every content block on the wire (those in pre
// were decided already), then applies the whole-result bound to the blocks
// kept inline. It returns the blocks that
// take their place and whether any block changed; refs learns the stored
// references.
func (b *bounder) boundWireBlocks(ctx context.Context, call hybridctx.Call, blocks []json.RawMessage, refs map[artifact.Ref]bool, pre map[int]decided) ([]json.RawMessage, bool, error) {
	repls := make([][]mcp.Content, len(blocks))
	sizes := make([]int64, len(blocks))
	for i, raw := range blocks {
		d, ok := pre[i]
		repl, ref := d.repl, d.ref
		if !ok {
			var err error
			if repl, ref, err = b.decideWire(ctx, call, raw); err != nil {
				return nil, false, err
			}
		}
		repls[i], sizes[i] = repl, payloadSize(wirePayloadOf(raw))
		if ok {
			sizes[i] = -1 // decided while it streamed: never stored again
		}
		if repl != nil {
			sizes[i] = -1
			refs[ref] = true
		}
	}
	over := hybridctx.OverResultBound(sizes, b.resultBound())
	if !streamedBlocks(pre) && !b.perBlockOnly && b.storedWholeAnyway(sizes, over) {
		over = nil // boundWireWith stores the whole array instead
	}
	for _, i := range over {
		payload, mime, ann, _ := wirePayload(blocks[i])
		repl, ref, err := b.decide(ctx, call, payload, mime, ann, true)
		if err != nil {
			return nil, false, err
		}
		repls[i] = repl
		if !ref.IsZero() {
			refs[ref] = true
		}
	}
	out := make([]json.RawMessage, 0, len(blocks)+1)
	changed := false
	for i, raw := range blocks {
		if repls[i] == nil {
			out = append(out, raw)
			continue
		}
		changed = true
		var err error
		if out, err = appendEncoded(out, repls[i]); err != nil {
			return nil, false, err
		}
	}
	return out, changed, nil
}

// wirePayloadOf returns the payload wirePayload finds in a block.
func wirePayloadOf(raw json.RawMessage) any {
	p, _, _, _ := wirePayload(raw)
	return p
}

// resultBound returns the offloader's whole-result bound.
func (b *bounder) resultBound() int64 { return b.off.Policy().ResultBound() }

// extras returns the JSON of a result's keys outside protocolKeys, and
// those keys.
func extras(fields map[string]json.RawMessage) (json.RawMessage, []string) {
	rest := map[string]json.RawMessage{}
	var keys []string
	for k, v := range fields {
		if !protocolKeys[k] {
			rest[k] = v
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(rest)
	if err != nil {
		return nil, nil
	}
	return b, keys
}

// boundOpaque decides a result that is not a well-formed tools/call result
// as one payload; a stored one becomes a result holding the notice and link.
func (b *bounder) boundOpaque(ctx context.Context, call hybridctx.Call, result json.RawMessage) (json.RawMessage, error) {
	repl, _, err := b.replace(ctx, call, result, mimeJSON, nil)
	if err != nil || repl == nil {
		return result, err
	}
	return json.Marshal(&mcp.CallToolResult{Content: repl})
}

func appendEncoded(out []json.RawMessage, blocks []mcp.Content) ([]json.RawMessage, error) {
	for _, c := range blocks {
		raw, err := c.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }
