package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpblock"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
	"github.com/hybridctx/hybridctx/readtools"
)

// MIME types of stored payloads, as the rule in package mcpblock names
// them (the bounder labels what it stores with the same).
const (
	mimeText   = mcpblock.MIMEText
	mimeJSON   = mcpblock.MIMEJSON
	mimeBinary = mcpblock.MIMEBinary
)

// ArtifactURITemplate is the resource template under which stored bodies
// are readable with resources/read.
const ArtifactURITemplate = "artifact://sha256/{hex}"

// Keys of the _meta object of a resolved read: the clamped range and the
// size of the whole body, so a client can page without parsing text.
const (
	MetaOffset   = "hybridctx/offset"
	MetaLength   = "hybridctx/length"
	MetaBodySize = "hybridctx/body_size"
)

// Keys of the _meta object of a resolved search, query or paged lines
// read: how many matches, results or lines there are, and where the next
// call continues (the skip or start_line; absent when nothing is left).
const (
	MetaView  = "hybridctx/view"
	MetaTotal = "hybridctx/total"
	MetaNext  = "hybridctx/next"
)

// reader serves explicit reads: the read tools of package readtools and
// resources/read of artifact:// URIs.
type reader struct {
	reh      *hybridctx.Rehydrator
	set      *readtools.Set
	budget   int64
	reporter hybridctx.Reporter
	// mimeOf, when set, returns the MIME type a stored payload had ("" when
	// unknown).
	mimeOf func(artifact.Ref) string
}

// setNames builds the reader's read tools with the given names.
func (r *reader) setNames(names readtools.Names) error {
	set, err := readtools.New(r.reh, &readtools.Options{BudgetCap: r.budget, Names: names})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	r.set = set
	return nil
}

// toolDefs returns the read tools' definitions, in the order read, search,
// query.
func (r *reader) toolDefs() []*mcp.Tool {
	open := false
	var out []*mcp.Tool
	for _, t := range r.set.Tools() {
		out = append(out, &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &open}})
	}
	return out
}

// templateDef returns the artifact resource template.
func (r *reader) templateDef() *mcp.ResourceTemplate {
	return &mcp.ResourceTemplate{
		Name:        "artifact",
		Title:       "Stored tool result",
		URITemplate: ArtifactURITemplate,
		Description: fmt.Sprintf("A tool result stored outside the conversation; resources/read returns it whole when it is at most %d bytes.", r.budget),
	}
}

// callTool runs one call of the read tool named name. It returns an error
// only when the context was cancelled; every other failure is a tool result
// with isError set.
func (r *reader) callTool(ctx context.Context, name string, rawArgs json.RawMessage) (*mcp.CallToolResult, error) {
	res, err := r.set.Call(bound.WithReporter(ctx, r.reporter), name, rawArgs)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return toolError("hybridctx: no such read tool"), nil
	}
	if res.IsError {
		return toolError(res.Text), nil
	}
	got := res.Rehydration
	meta := mcp.Meta{MetaOffset: got.Offset, MetaLength: got.Length, MetaBodySize: got.BodySize}
	if v := got.View(); v != hybridctx.ViewRange {
		meta[MetaView] = v.String()
		meta[MetaTotal] = got.Page.Total
		if got.Page.Next > 0 {
			meta[MetaNext] = got.Page.Next
		}
	}
	out := &mcp.CallToolResult{Meta: meta}
	if b := res.Bytes(); res.UTF8() {
		out.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
	} else {
		out.Content = []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: got.Ref.String(), MIMEType: r.binaryMIME(got.Ref, got.Offset, b), Blob: b}}}
	}
	if res.Note != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: res.Note})
	}
	return out, nil
}

// readResource serves resources/read of an artifact:// URI: the same owner,
// digest and budget checks, and the whole body must fit the budget.
func (r *reader) readResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	ctx = bound.WithReporter(ctx, r.reporter)
	got, err := r.reh.Rehydrate(ctx, hybridctx.Request{Reference: uri, Budget: r.budget})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the read failed; it may be retried"}
	}
	switch got.Outcome() {
	case hybridctx.Resolved:
	case hybridctx.Unauthorized:
		// Identical to a digest never stored (no existence oracle).
		return nil, mcp.ResourceNotFoundError(uri)
	case hybridctx.InvalidReference:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: r.set.Refusal(got, r.budget)}
	case hybridctx.Missing:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: r.set.Refusal(got, r.budget)}
	case hybridctx.OverBudget:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: r.set.Refusal(got, r.budget)}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: r.set.Refusal(got, r.budget)}
	}
	b := got.Segment.Bytes()
	c := &mcp.ResourceContents{URI: got.Ref.String()}
	switch {
	case utf8.Valid(b) && json.Valid(b):
		c.MIMEType, c.Text = mimeJSON, string(b)
	case utf8.Valid(b):
		c.MIMEType, c.Text = mimeText, string(b)
	default:
		c.MIMEType, c.Blob = r.binaryMIME(got.Ref, 0, b), b
	}
	res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}
	res.CacheScope = "private" // owner-bound content
	return res, nil
}

// binaryMIME returns the MIME type of binary bytes read from ref at off:
// the one its resource_link announced when this proxy stored it, else, for
// a read from the start, the type the bytes show (an image or audio format
// a reference written by another proxy process holds), else
// application/octet-stream.
func (r *reader) binaryMIME(ref artifact.Ref, off int64, b []byte) string {
	if r.mimeOf != nil {
		if m := r.mimeOf(ref); m != "" && m != mimeText && m != mimeJSON {
			return m
		}
	}
	if off == 0 {
		if m, _, _ := strings.Cut(http.DetectContentType(b), ";"); strings.HasPrefix(m, "image/") || strings.HasPrefix(m, "audio/") || strings.HasPrefix(m, "video/") {
			return m
		}
	}
	return mimeBinary
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// isArtifactURI reports whether uri uses the artifact scheme (in any case),
// so that resources/read of it is served by the reader, never forwarded.
func isArtifactURI(uri string) bool {
	scheme, _, ok := strings.Cut(uri, ":")
	return ok && strings.EqualFold(scheme, "artifact")
}
