package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpblock"
)

// MIME types of the payloads the bounder stores.
const (
	mimeText   = mcpblock.MIMEText
	mimeJSON   = mcpblock.MIMEJSON
	mimeBinary = mcpblock.MIMEBinary
)

// bounder makes one offload decision per content block of a tools/call
// result, plus one for its structuredContent, and replaces every block the
// offloader stores by the bounded notice and a resource_link.
type bounder struct {
	off      *hybridctx.Offloader
	reporter hybridctx.Reporter
	// remember, when set, learns the MIME type of every stored payload so
	// that reads can label binary bodies.
	remember func(ref artifact.Ref, mime string)
	// perBlockOnly, set by tests, turns storing a result whole off: the
	// answer a result whose payloads streamed into the workspace gets.
	perBlockOnly bool
}

// withReporter returns ctx carrying the bounder's reporter when ctx has none.
func withReporter(ctx context.Context, r hybridctx.Reporter) context.Context {
	if r != nil && hybridctx.ReporterFrom(ctx) == nil {
		return hybridctx.WithReporter(ctx, r)
	}
	return ctx
}

// replace decides one payload (a string, []byte or json.RawMessage). It
// returns nil when the payload stays inline, else the blocks that take its
// place: the notice and a resource_link for a stored payload, the categorical
// notice alone for failed and recovery_required; both carry ann (the
// original block's annotations, so audience and priority survive). ref is
// the stored reference (zero unless stored). The error is non-nil only when
// no decision was made (a cancelled context).
func (b *bounder) replace(ctx context.Context, call hybridctx.Call, payload any, mime string, ann *mcp.Annotations) ([]mcp.Content, artifact.Ref, error) {
	return b.decide(ctx, call, payload, mime, ann, false)
}

// decide is replace, storing the payload whatever its size when force is
// set (the whole-result bound).
func (b *bounder) decide(ctx context.Context, call hybridctx.Call, payload any, mime string, ann *mcp.Annotations, force bool) ([]mcp.Content, artifact.Ref, error) {
	decide := b.off.Offload
	if force {
		decide = b.off.Store
	}
	out, err := decide(ctx, call, payload)
	if err != nil {
		return nil, artifact.Ref{}, err
	}
	repl, ref := b.outcomeBlocks(out, mime, ann)
	return repl, ref, nil
}

// outcomeBlocks returns the blocks that take a decided payload's place (nil
// when it stays inline) and the stored reference, as replace describes.
func (b *bounder) outcomeBlocks(out *hybridctx.OffloadResult, mime string, ann *mcp.Annotations) ([]mcp.Content, artifact.Ref) {
	switch out.Outcome() {
	case hybridctx.Inline:
		return nil, artifact.Ref{}
	case hybridctx.Offloaded, hybridctx.ExistingReference:
		size, _ := out.Diagnostics().ObservedBytes()
		if b.remember != nil {
			b.remember(out.Ref, mime)
		}
		return []mcp.Content{
			&mcp.TextContent{Text: out.Notice, Annotations: ann},
			&mcp.ResourceLink{URI: out.Ref.String(), Name: linkName(out.Ref), MIMEType: mime, Size: &size, Annotations: ann},
		}, out.Ref
	}
	// failed, recovery_required: the categorical notice says what happened;
	// the payload is not shown (it would break the bound), and not lost
	// silently.
	return []mcp.Content{&mcp.TextContent{Text: out.Notice, Annotations: ann}}, artifact.Ref{}
}

// linkName is the resource_link name of a stored payload.
func linkName(ref artifact.Ref) string { return "sha256-" + ref.Hex()[:16] }

// threshold returns the offloader's inline threshold.
func (b *bounder) threshold() int64 { return b.off.Policy().InlineThreshold }

// Typed results (the middleware).

// boundTyped bounds a result built in process by a Go MCP server. It never
// modifies res; it returns res itself when nothing was stored or failed.
func (b *bounder) boundTyped(ctx context.Context, call hybridctx.Call, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	ctx = withReporter(ctx, b.reporter)
	refs := map[artifact.Ref]bool{}
	out, changed, err := b.boundTypedBlocks(ctx, call, res.Content, refs)
	if err != nil {
		return nil, err
	}
	nBlockOut := len(out)
	if !changed {
		nBlockOut = len(res.Content)
	}
	r2 := *res
	// extra decides structuredContent, or _meta when it alone is oversized.
	extra := func(v any, onlyOver bool) (bool, error) {
		raw, err := structuredJSON(v)
		if err != nil || onlyOver && int64(len(raw)) <= b.threshold() {
			return false, err
		}
		repl, ref, err := b.replace(ctx, call, raw, mimeJSON, nil)
		if err != nil || repl == nil {
			return false, err
		}
		if !changed {
			out = append(make([]mcp.Content, 0, len(res.Content)+2), res.Content...)
			changed = true
		}
		if ref.IsZero() || !refs[ref] {
			out = append(out, repl...)
			refs[ref] = true
		}
		return true, nil
	}
	if res.StructuredContent != nil {
		removed, err := extra(res.StructuredContent, false)
		if err != nil {
			return nil, err
		}
		if removed {
			r2.StructuredContent = nil
		}
	}
	if len(res.Meta) > 0 {
		removed, err := extra(res.Meta, true)
		if err != nil {
			return nil, err
		}
		if removed {
			r2.Meta = nil
		}
	}
	if changed {
		r2.Content = out
	}
	if len(res.Content) < 2 { // a single block's notice and link are the smallest form
		if !changed {
			return res, nil
		}
		return &r2, nil
	}
	sent, err := json.Marshal(&r2)
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: encoding a result: %w", err)
	}
	if !b.off.Policy().SendsOverResultBound(int64(len(sent))) {
		if !changed {
			return res, nil
		}
		return &r2, nil
	}
	// Still over the bound, notices and links included: the original
	// content array is stored whole (see docs/mcp-proxy.md).
	content, err := json.Marshal(res.Content)
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: encoding a result: %w", err)
	}
	types := make([]string, len(res.Content))
	for i, c := range res.Content {
		types[i] = typedType(c)
	}
	whole, err := b.off.StoreResult(ctx, call, bytes.NewReader(content), types)
	if err != nil {
		return nil, err
	}
	repl, _ := b.outcomeBlocks(whole, mimeJSON, nil)
	r2.Content = append(repl, r2.Content[nBlockOut:]...)
	return &r2, nil
}

// typedType returns the wire "type" of a typed content block.
func typedType(c mcp.Content) string {
	switch c.(type) {
	case *mcp.TextContent:
		return "text"
	case *mcp.ImageContent:
		return "image"
	case *mcp.AudioContent:
		return "audio"
	case *mcp.EmbeddedResource:
		return "resource"
	case *mcp.ResourceLink:
		return "resource_link"
	}
	return ""
}

// boundTypedBlocks decides every typed content block, then applies the
// whole-result bound to the blocks kept inline (measured by their payload,
// as the threshold is). It
// returns the new blocks (nil when none changed) and whether any changed;
// refs learns the stored references.
func (b *bounder) boundTypedBlocks(ctx context.Context, call hybridctx.Call, blocks []mcp.Content, refs map[artifact.Ref]bool) ([]mcp.Content, bool, error) {
	repls := make([][]mcp.Content, len(blocks))
	sizes := make([]int64, len(blocks))
	stored := false
	for i, c := range blocks {
		payload, mime, ann, err := b.typedPayload(c)
		if err != nil {
			return nil, false, err
		}
		repl, ref, err := b.replace(ctx, call, payload, mime, ann)
		if err != nil {
			return nil, false, err
		}
		sizes[i] = -1
		if repls[i] = repl; repl != nil {
			stored = true
			refs[ref] = true
		} else {
			sizes[i] = payloadSize(payload)
		}
	}
	over := hybridctx.OverResultBound(sizes, b.resultBound())
	if b.storedWholeAnyway(sizes, over) {
		over = nil // boundTyped stores the whole array instead
	}
	for _, i := range over {
		payload, mime, ann, err := b.typedPayload(blocks[i])
		if err != nil {
			return nil, false, err
		}
		repl, ref, err := b.decide(ctx, call, payload, mime, ann, true)
		if err != nil {
			return nil, false, err
		}
		repls[i], stored = repl, true
		if !ref.IsZero() {
			refs[ref] = true
		}
	}
	if !stored {
		return nil, false, nil
	}
	out := make([]mcp.Content, 0, len(blocks)+1)
	for i, c := range blocks {
		if repls[i] == nil {
			out = append(out, c)
		} else {
			out = append(out, repls[i]...)
		}
	}
	return out, true, nil
}

// payloadSize is the size of a decided payload, as the offloader measures
// it: the bytes of a string, []byte or json.RawMessage.
func payloadSize(payload any) int64 {
	switch p := payload.(type) {
	case string:
		return int64(len(p))
	case []byte:
		return int64(len(p))
	case json.RawMessage:
		return int64(len(p))
	}
	return 0
}

// typedPayload returns what is decided for one typed block: its payload as
// the rule in package mcpblock names it (the text of a text block, the
// decoded bytes of an image, audio or embedded resource), and the JSON
// encoding of any other block, or of a block whose other fields (_meta,
// annotations, MIME type) are themselves over the threshold.
func (b *bounder) typedPayload(c mcp.Content) (payload any, mime string, ann *mcp.Annotations, err error) {
	typ, get, ann, bare := typedBlock(c)
	if _, v, m, ok := mcpblock.Find(typ, get); ok {
		if bare == nil {
			return v, m, ann, nil
		}
		rest, err := bare.MarshalJSON()
		if err != nil {
			return nil, "", nil, fmt.Errorf("mcpproxy: encoding a content block: %w", err)
		}
		if int64(len(rest)) <= b.threshold() {
			return v, m, ann, nil
		}
	}
	raw, err := c.MarshalJSON()
	if err != nil {
		return nil, "", nil, fmt.Errorf("mcpproxy: encoding a content block: %w", err)
	}
	return json.RawMessage(raw), mimeJSON, nil, nil
}

// typedBlock returns a typed block's type, its members as the payload rule
// reads them, its annotations and the block without its payload, to
// measure the rest (nil: nothing else to measure).
func typedBlock(c mcp.Content) (typ string, get mcpblock.Getter, ann *mcp.Annotations, bare mcp.Content) {
	switch c := c.(type) {
	case *mcp.TextContent:
		get = func(in, f string) (any, bool) { return c.Text, in == "" && f == "text" }
		if c.Meta == nil && c.Annotations == nil {
			return "text", get, nil, nil
		}
		return "text", get, c.Annotations, &mcp.TextContent{Meta: c.Meta, Annotations: c.Annotations}
	case *mcp.ImageContent:
		return "image", mcpblock.Media(c.Data, c.MIMEType), c.Annotations, &mcp.ImageContent{Meta: c.Meta, Annotations: c.Annotations, MIMEType: c.MIMEType}
	case *mcp.AudioContent:
		return "audio", mcpblock.Media(c.Data, c.MIMEType), c.Annotations, &mcp.AudioContent{Meta: c.Meta, Annotations: c.Annotations, MIMEType: c.MIMEType}
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "", nil, nil, nil
		}
		get = func(in, f string) (any, bool) {
			switch {
			case in != "resource":
			case f == "blob":
				return r.Blob, r.Blob != nil
			case f == "text":
				return r.Text, r.Blob == nil
			case f == "mimeType":
				return r.MIMEType, true
			}
			return nil, false
		}
		return "resource", get, c.Annotations, &mcp.EmbeddedResource{Meta: c.Meta, Annotations: c.Annotations,
			Resource: &mcp.ResourceContents{URI: r.URI, MIMEType: r.MIMEType, Meta: r.Meta}}
	}
	return "", nil, nil, nil
}

// structuredJSON returns the bytes of structuredContent (or _meta) as the
// client would receive them.
func structuredJSON(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: encoding a result: %w", err)
	}
	return raw, nil
}
