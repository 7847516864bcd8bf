package mcpgo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/mcpproxy"
	"github.com/hybridctx/hybridctx/readtools"
)

// ArtifactURITemplate is the resource template under which stored bodies
// are readable with resources/read.
const ArtifactURITemplate = mcpproxy.ArtifactURITemplate

// ErrNilServer is returned by AddReadTools for a nil server.
var ErrNilServer = errors.New("mcpgo: nil server")

// ErrNilRehydrator is returned by AddReadTools for a nil Rehydrator.
var ErrNilRehydrator = adaptkit.ErrNilRehydrator

// AddReadTools registers on s the read tools of package readtools
// (read_artifact, search_artifact, query_artifact, under Options.Names)
// and the resource template artifact://sha256/{hex}, all served by reh:
// the owner, digest and budget checks of an explicit rehydration, with
// the same answers and texts as the MCP proxy. Refusals and malformed
// arguments are isError results with the categorical text; an answer is
// text when it is valid UTF-8, else a base64 blob in an embedded resource,
// with the range and view in _meta. resources/read returns a whole body
// that fits the budget; another owner's reference reads as not found, like
// one never stored.
func AddReadTools(s *server.MCPServer, reh *hybridctx.Rehydrator, opts *Options) error {
	if s == nil {
		return ErrNilServer
	}
	set, err := opts.reads(reh)
	if err != nil {
		return err
	}
	for _, d := range set.Tools() {
		t := mcp.NewToolWithRawSchema(d.Name, d.Description, d.InputSchema)
		yes, no := true, false
		t.Annotations = mcp.ToolAnnotation{Title: d.Title, ReadOnlyHint: &yes, IdempotentHint: &yes, OpenWorldHint: &no}
		name := d.Name
		s.AddTool(t, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			markRead(ctx)
			args := req.Params.RawArguments
			if len(args) == 0 {
				args = adaptkit.RawArgs(req.Params.Arguments)
			}
			res, err := set.Call(ctx, name, args)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return mcp.NewToolResultError(adaptkit.ToolFailedNotice), nil
			}
			return toolResult(res), nil
		})
	}
	tmpl := mcp.NewResourceTemplate(ArtifactURITemplate, "artifact",
		mcp.WithTemplateDescription(fmt.Sprintf("A tool result stored outside the conversation; resources/read returns it whole when it is at most %d bytes.", set.BudgetCap())))
	s.AddResourceTemplate(tmpl, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return readResource(ctx, reh, set, req.Params.URI)
	})
	return nil
}

// toolResult renders a read tool's answer.
func toolResult(res *readtools.Result) *mcp.CallToolResult {
	if res.IsError {
		return mcp.NewToolResultError(res.Text)
	}
	got := res.Rehydration
	meta := map[string]any{mcpproxy.MetaOffset: got.Offset, mcpproxy.MetaLength: got.Length, mcpproxy.MetaBodySize: got.BodySize}
	if v := got.View(); v != hybridctx.ViewRange {
		meta[mcpproxy.MetaView] = v.String()
		meta[mcpproxy.MetaTotal] = got.Page.Total
		if got.Page.Next > 0 {
			meta[mcpproxy.MetaNext] = got.Page.Next
		}
	}
	out := &mcp.CallToolResult{Result: mcp.Result{Meta: mcp.NewMetaFromMap(meta)}}
	if b := res.Bytes(); res.UTF8() {
		out.Content = []mcp.Content{mcp.NewTextContent(string(b))}
	} else {
		out.Content = []mcp.Content{mcp.EmbeddedResource{Type: mcp.ContentTypeResource,
			Resource: mcp.BlobResourceContents{URI: got.Ref.String(), MIMEType: mimeBinary, Blob: base64.StdEncoding.EncodeToString(b)}}}
	}
	if res.Note != "" {
		out.Content = append(out.Content, mcp.NewTextContent(res.Note))
	}
	return out
}

// readResource serves resources/read of an artifact:// URI under the same
// checks, the whole body within the budget.
func readResource(ctx context.Context, reh *hybridctx.Rehydrator, set *readtools.Set, uri string) ([]mcp.ResourceContents, error) {
	budget := set.BudgetCap()
	got, err := reh.Rehydrate(ctx, hybridctx.Request{Reference: uri, Budget: budget})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errors.New(readtools.ErrReadFailed.Error())
	}
	switch got.Outcome() {
	case hybridctx.Resolved:
	case hybridctx.Unauthorized:
		// Identical to a digest never stored (no existence oracle).
		return nil, server.ErrResourceNotFound
	default:
		return nil, errors.New(set.Refusal(got, budget))
	}
	b := got.Segment.Bytes()
	switch {
	case utf8.Valid(b) && json.Valid(b):
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: mimeJSON, Text: string(b)}}, nil
	case utf8.Valid(b):
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: mimeText, Text: string(b)}}, nil
	}
	return []mcp.ResourceContents{mcp.BlobResourceContents{URI: uri, MIMEType: mimeBinary, Blob: base64.StdEncoding.EncodeToString(b)}}, nil
}

// reads returns the read tools' set over reh under o (nil: defaults).
func (o *Options) reads(reh *hybridctx.Rehydrator) (*readtools.Set, error) {
	if o == nil {
		return adaptkit.NewReads(reh, readtools.Names{}, 0)
	}
	return adaptkit.NewReads(reh, o.Names, o.Budget)
}
