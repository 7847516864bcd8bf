// Package bound is the proxy's one bounder of tools/call results: each
// payload of a result (a content block's, structuredContent, the other
// members) decided on its own, then the whole-result bound, written once
// in hybridctx.Offloader.BoundResult, weighing the result as encoded for
// the client (docs/mcp-proxy.md, "The whole-result bound"). Every path
// ends here: results on the wire (Bounder.Wire), results built in process
// (Bounder.Typed, Bounder.Encoded: mcpproxy's Middleware, BoundResult and
// BoundToolResult) and results bounded as they are read (Walk, over the
// streaming JSON reader internal/jsonstream). Each block's payload is
// found by the rule in package mcpblock.
package bound

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpblock"
)

// MIME types of the payloads the Bounder stores.
const (
	mimeText   = mcpblock.MIMEText
	mimeJSON   = mcpblock.MIMEJSON
	mimeBinary = mcpblock.MIMEBinary
)

// Bounder makes one offload decision per content block of a tools/call
// result, plus one for its structuredContent and one for its other members
// when they are over the threshold, replaces every payload the offloader
// stores by the bounded notice and a resource_link, then applies the
// whole-result bound (form.go).
type Bounder struct {
	// Off decides and stores; it must not be nil.
	Off *hybridctx.Offloader
	// Reporter, when set, receives the decisions' events when the context
	// carries no reporter of its own.
	Reporter hybridctx.Reporter
	// Remember, when set, learns the MIME type of every stored payload so
	// that reads can label binary bodies.
	Remember func(ref artifact.Ref, mime string)
	// OnDecision, when set, receives every decision the bounder makes
	// (adapters/mcpgo's Options.OnDecision, through mcpproxy.BoundResult).
	OnDecision func(*hybridctx.OffloadResult)
	// Nonce is the random part of the tokens of payloads streamed out of
	// results encoded in process (Encoded); "" draws one per result.
	Nonce string
}

// WithReporter returns ctx carrying the Bounder's reporter when ctx has none.
func WithReporter(ctx context.Context, r hybridctx.Reporter) context.Context {
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
func (b *Bounder) replace(ctx context.Context, call hybridctx.Call, payload any, mime string, ann *mcp.Annotations) ([]mcp.Content, artifact.Ref, error) {
	return b.decide(ctx, call, payload, mime, ann, false)
}

// decide is replace, storing the payload whatever its size when force is
// set (the whole-result bound).
func (b *Bounder) decide(ctx context.Context, call hybridctx.Call, payload any, mime string, ann *mcp.Annotations, force bool) ([]mcp.Content, artifact.Ref, error) {
	decide := b.Off.Offload
	if force {
		decide = b.Off.Store
	}
	out, err := decide(ctx, call, payload)
	if err != nil {
		return nil, artifact.Ref{}, err
	}
	b.decided(out)
	repl, ref := b.outcomeBlocks(out, mime, ann)
	return repl, ref, nil
}

// decided hands a decision to onDecision, when set.
func (b *Bounder) decided(out *hybridctx.OffloadResult) {
	if b.OnDecision != nil {
		b.OnDecision(out)
	}
}

// outcomeBlocks returns the blocks that take a decided payload's place (nil
// when it stays inline) and the stored reference, as replace describes.
func (b *Bounder) outcomeBlocks(out *hybridctx.OffloadResult, mime string, ann *mcp.Annotations) ([]mcp.Content, artifact.Ref) {
	switch out.Outcome() {
	case hybridctx.Inline:
		return nil, artifact.Ref{}
	case hybridctx.Offloaded, hybridctx.ExistingReference:
		size, _ := out.Diagnostics().ObservedBytes()
		if b.Remember != nil {
			b.Remember(out.Ref, mime)
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
func (b *Bounder) threshold() int64 { return b.Off.Policy().InlineThreshold }

// Typed results (the middleware).

// Typed bounds a result built in process by a Go MCP server: it is
// encoded as the client would receive it and bounded as a wire result
// (Encoded), so one rule weighs every path on the same bytes. It never modifies res; it
// returns res itself when nothing was stored, failed or folded.
func (b *Bounder) Typed(ctx context.Context, call hybridctx.Call, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("mcpproxy: encoding a result: %w", err)
	}
	out, err := b.Encoded(ctx, call, raw)
	if err != nil {
		return nil, err
	}
	if len(out) == len(raw) && &out[0] == &raw[0] {
		return res, nil
	}
	var r2 mcp.CallToolResult
	if err := json.Unmarshal(out, &r2); err != nil {
		return nil, fmt.Errorf("mcpproxy: decoding a bounded result: %w", err)
	}
	return &r2, nil
}
