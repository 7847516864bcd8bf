// Package mcpgo adapts hybridctx to mcp-go servers
// (github.com/mark3labs/mcp-go): Middleware bounds every tool result the
// way the MCP proxy does (a stored block becomes the bounded notice and a
// resource_link), and AddReadTools registers the read tools and the
// artifact://sha256/{hex} resource template.
//
// It lives in its own module so that the hybridctx core does not depend on
// mcp-go.
package mcpgo

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpblock"
	"github.com/hybridctx/hybridctx/readtools"
)

// MIME types of the payloads the middleware stores.
const (
	mimeText   = mcpblock.MIMEText
	mimeJSON   = mcpblock.MIMEJSON
	mimeBinary = mcpblock.MIMEBinary
)

// Options configure the middleware and the read tools. A nil *Options
// means defaults.
type Options struct {
	// Budget caps every read; 0 means the read tools' default.
	Budget int64
	// Names overrides the read tools' names in AddReadTools; empty names
	// keep the defaults. The read tool's must equal the Offloader's
	// Policy.ReadToolName, which the notice names.
	Names readtools.Names
	// OnDecision, when set, receives every offload decision with the tool
	// name it decided, for the host (the model sees only the notice). It
	// runs on the tool-call goroutine.
	OnDecision func(ctx context.Context, tool string, out *hybridctx.OffloadResult)
}

// readSlot lets the read tools mark their own results, through the call's
// context, so the middleware passes them unchanged (recovered content is
// never offloaded again).
type readSlot struct{ read bool }

type slotKey struct{}

func markRead(ctx context.Context) {
	if s, ok := ctx.Value(slotKey{}).(*readSlot); ok {
		s.read = true
	}
}

// Middleware returns a tool handler middleware that bounds every result:
//
//	s := server.NewMCPServer(name, version, server.WithToolHandlerMiddleware(mcpgo.Middleware(off, nil)))
//
// Each content block (text, image, audio, embedded resource) and the
// structuredContent are decided with off, one decision each; a stored
// payload is replaced by the bounded notice and a resource_link to its
// artifact:// URI, stored structuredContent is removed, a failed decision
// leaves the categorical notice. Results of the read tools registered by
// AddReadTools pass unchanged. A handler's error becomes an isError result
// holding the categorical failure notice, never the error's text (a
// cancelled context stays an error). off must not be nil.
func Middleware(off *hybridctx.Offloader, opts *Options) server.ToolHandlerMiddleware {
	if off == nil {
		panic("mcpgo.Middleware: nil Offloader")
	}
	var hook func(context.Context, string, *hybridctx.OffloadResult)
	if opts != nil {
		hook = opts.OnDecision
	}
	var calls atomic.Uint64
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			slot := &readSlot{}
			res, err := next(context.WithValue(ctx, slotKey{}, slot), req)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				f := adaptkit.Failed()
				return mcp.NewToolResultError(f.Text), nil
			}
			if res == nil || slot.read {
				return res, nil
			}
			b := &bounder{off: off, hook: hook, tool: req.Params.Name,
				call: hybridctx.Call{Tool: req.Params.Name, ID: "call-" + strconv.FormatUint(calls.Add(1), 10)}}
			return b.bound(ctx, res)
		}
	}
}

// bounder decides the blocks of one result.
type bounder struct {
	off  *hybridctx.Offloader
	hook func(context.Context, string, *hybridctx.OffloadResult)
	tool string
	call hybridctx.Call
}

// replace decides one payload; nil blocks mean it stays inline.
func (b *bounder) replace(ctx context.Context, payload any, mime string, ann *mcp.Annotations) ([]mcp.Content, artifact.Ref, error) {
	r, err := adaptkit.Decide(ctx, b.off, b.call, payload)
	if err != nil {
		return nil, artifact.Ref{}, err
	}
	if r.Offload == nil {
		return []mcp.Content{mcp.TextContent{Type: mcp.ContentTypeText, Text: r.Text, Annotated: mcp.Annotated{Annotations: ann}}}, artifact.Ref{}, nil
	}
	if b.hook != nil {
		b.hook(ctx, b.tool, r.Offload)
	}
	out := r.Offload
	switch out.Outcome() {
	case hybridctx.Inline:
		return nil, artifact.Ref{}, nil
	case hybridctx.Offloaded, hybridctx.ExistingReference:
		size, _ := out.Diagnostics().ObservedBytes()
		link := mcp.ResourceLink{Type: mcp.ContentTypeLink, URI: out.Ref.String(), Name: "sha256-" + out.Ref.Hex()[:16],
			MIMEType: mime, Size: &size, Annotated: mcp.Annotated{Annotations: ann}}
		return []mcp.Content{mcp.TextContent{Type: mcp.ContentTypeText, Text: out.Notice, Annotated: mcp.Annotated{Annotations: ann}}, link}, out.Ref, nil
	}
	return []mcp.Content{mcp.TextContent{Type: mcp.ContentTypeText, Text: out.Notice, Annotated: mcp.Annotated{Annotations: ann}}}, artifact.Ref{}, nil
}

// bound returns res with every stored payload replaced; res itself when
// nothing changed. res is never modified.
func (b *bounder) bound(ctx context.Context, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	var out []mcp.Content
	changed := false
	refs := map[artifact.Ref]bool{}
	for i, c := range res.Content {
		payload, mime, ann, err := payloadOf(c)
		if err != nil {
			return nil, err
		}
		if payload == nil {
			if changed {
				out = append(out, c)
			}
			continue
		}
		repl, ref, err := b.replace(ctx, payload, mime, ann)
		if err != nil {
			return nil, err
		}
		if repl == nil {
			if changed {
				out = append(out, c)
			}
			continue
		}
		if !changed {
			out = append(make([]mcp.Content, 0, len(res.Content)+2), res.Content[:i]...)
			changed = true
		}
		out = append(out, repl...)
		refs[ref] = true
	}
	nBlockOut := len(out) // how many entries of out the blocks gave
	if !changed {
		nBlockOut = len(res.Content)
	}
	r2 := *res
	if res.StructuredContent != nil || len(res.RawStructuredContent) > 0 {
		raw := res.RawStructuredContent
		if len(raw) == 0 {
			var err error
			if raw, err = json.Marshal(res.StructuredContent); err != nil {
				return nil, fmt.Errorf("mcpgo: encoding structured content: %w", err)
			}
		}
		repl, ref, err := b.replace(ctx, json.RawMessage(raw), mimeJSON, nil)
		if err != nil {
			return nil, err
		}
		if repl != nil {
			if !changed {
				out = append(make([]mcp.Content, 0, len(res.Content)+2), res.Content...)
				changed = true
			}
			if ref.IsZero() || !refs[ref] {
				out = append(out, repl...)
			}
			r2.StructuredContent, r2.RawStructuredContent = nil, nil
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
	return b.boundWhole(ctx, res, &r2, changed, nBlockOut)
}

// boundWhole applies the whole-result bound to r2, res as bounded block by
// block: when it would still send more than the policy's ResultBound,
// notices and links included, res's original content array is stored as
// one JSON artifact and replaced by the whole-result notice and one
// resource_link (see docs/mcp-proxy.md), followed by what r2.Content holds
// after its first nBlockOut entries (the structured content's notice and
// link).
func (b *bounder) boundWhole(ctx context.Context, res, r2 *mcp.CallToolResult, changed bool, nBlockOut int) (*mcp.CallToolResult, error) {
	sent, err := json.Marshal(r2)
	if err != nil {
		return nil, fmt.Errorf("mcpgo: encoding a result: %w", err)
	}
	if !b.off.Policy().SendsOverResultBound(int64(len(sent))) {
		if !changed {
			return res, nil
		}
		return r2, nil
	}
	content, err := json.Marshal(res.Content)
	if err != nil {
		return nil, fmt.Errorf("mcpgo: encoding a result: %w", err)
	}
	var typed []struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(content, &typed)
	types := make([]string, len(typed))
	for i, t := range typed {
		types[i] = t.Type
	}
	whole, err := b.off.StoreResult(ctx, b.call, bytes.NewReader(content), types)
	if err != nil {
		return nil, err
	}
	if b.hook != nil {
		b.hook(ctx, b.tool, whole)
	}
	r3 := *r2
	r3.Content = []mcp.Content{mcp.TextContent{Type: mcp.ContentTypeText, Text: whole.Notice}}
	if oc := whole.Outcome(); oc == hybridctx.Offloaded || oc == hybridctx.ExistingReference {
		size, _ := whole.Diagnostics().ObservedBytes()
		r3.Content = append(r3.Content, mcp.ResourceLink{Type: mcp.ContentTypeLink, URI: whole.Ref.String(),
			Name: "sha256-" + whole.Ref.Hex()[:16], MIMEType: mimeJSON, Size: &size})
	}
	r3.Content = append(r3.Content, r2.Content[nBlockOut:]...)
	return &r3, nil
}

// payloadOf returns what is decided for one block: the text of a text block
// or text resource, the decoded bytes of an image, audio or blob resource,
// the JSON of any other block except a resource_link (nil: kept as is).
func payloadOf(c mcp.Content) (payload any, mime string, ann *mcp.Annotations, err error) {
	switch v := c.(type) {
	case *mcp.TextContent:
		if v != nil {
			return payloadOf(*v)
		}
	case *mcp.ImageContent:
		if v != nil {
			return payloadOf(*v)
		}
	case *mcp.AudioContent:
		if v != nil {
			return payloadOf(*v)
		}
	case *mcp.EmbeddedResource:
		if v != nil {
			return payloadOf(*v)
		}
	case mcp.ResourceLink, *mcp.ResourceLink:
		return nil, "", nil, nil
	}
	typ, get, ann := members(c)
	if p, v, mime, ok := mcpblock.Find(typ, get); ok {
		if s, ok := v.(string); ok && p.Base64 {
			return decoded(s), mime, ann, nil
		}
		return v, mime, ann, nil
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, "", nil, fmt.Errorf("mcpgo: encoding a content block: %w", err)
	}
	return json.RawMessage(raw), mimeJSON, nil, nil
}

// members returns a block's type, its members as the payload rule reads
// them and its annotations ("" when no rule applies).
func members(c mcp.Content) (typ string, get mcpblock.Getter, ann *mcp.Annotations) {
	switch v := c.(type) {
	case mcp.TextContent:
		return "text", func(in, f string) (any, bool) { return v.Text, in == "" && f == "text" }, v.Annotations
	case mcp.ImageContent:
		return "image", mcpblock.Media(v.Data, v.MIMEType), v.Annotations
	case mcp.AudioContent:
		return "audio", mcpblock.Media(v.Data, v.MIMEType), v.Annotations
	case mcp.EmbeddedResource:
		var blob, text, mime *string
		switch r := v.Resource.(type) {
		case mcp.TextResourceContents:
			text, mime = &r.Text, &r.MIMEType
		case *mcp.TextResourceContents:
			text, mime = &r.Text, &r.MIMEType
		case mcp.BlobResourceContents:
			blob, mime = &r.Blob, &r.MIMEType
		case *mcp.BlobResourceContents:
			blob, mime = &r.Blob, &r.MIMEType
		default:
			return "", nil, nil
		}
		return "resource", func(in, f string) (any, bool) {
			var m *string
			switch {
			case in != "resource":
			case f == "blob":
				m = blob
			case f == "text":
				m = text
			case f == "mimeType":
				m = mime
			}
			if m == nil {
				return nil, false
			}
			return *m, true
		}, v.Annotations
	}
	return "", nil, nil
}

// decoded returns the bytes of base64 data, or the text itself when it is
// not base64 (so nothing is lost either way).
func decoded(s string) any {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b
	}
	return s
}
