package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
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

// reader serves explicit reads: the read tool and resources/read of
// artifact:// URIs.
type reader struct {
	reh      *hybridctx.Rehydrator
	budget   int64
	tool     string
	reporter hybridctx.Reporter
	// mimeOf, when set, returns the MIME type a stored payload had ("" when
	// unknown).
	mimeOf func(artifact.Ref) string
}

// toolDef returns the read tool's definition.
func (r *reader) toolDef() *mcp.Tool {
	schema := json.RawMessage(`{"type":"object","properties":{` +
		`"reference":{"type":"string","description":"the artifact://sha256/<hex> reference, the first line of the notice"},` +
		`"offset":{"type":"integer","minimum":0,"description":"first byte to read (default 0)"},` +
		`"length":{"type":"integer","minimum":0,"description":"bytes to read (default 0: to the end)"},` +
		`"max_bytes":{"type":"integer","minimum":1,"description":"most bytes to return (default and cap ` + fmt.Sprint(r.budget) + `)"}},` +
		`"required":["reference"],"additionalProperties":false}`)
	open := false
	return &mcp.Tool{
		Name:  r.tool,
		Title: "Read a stored tool result",
		Description: fmt.Sprintf("Read a tool result that was stored outside this conversation, or a byte range of it, "+
			"by the reference its notice starts with. Returns at most max_bytes bytes (at most %d); "+
			"read large results in pages with offset and length.", r.budget),
		InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &open},
	}
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

// callTool runs one read tool call. It returns an error only when the context
// was cancelled; every other failure is a tool result with isError set.
func (r *reader) callTool(ctx context.Context, rawArgs json.RawMessage) (*mcp.CallToolResult, error) {
	args, err := ParseReadArgs(rawArgs)
	if err != nil {
		return toolError("hybridctx: " + err.Error()), nil
	}
	budget := r.budget
	if args.MaxBytes > 0 {
		budget = min(args.MaxBytes, budget)
	}
	ctx = withReporter(ctx, r.reporter)
	got, err := r.reh.Rehydrate(ctx, hybridctx.Request{Reference: args.Reference, Budget: budget,
		Offset: args.Offset, Length: args.Length, Source: hybridctx.SourceToolRequest})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Never the error text: it may name storage paths.
		return toolError("hybridctx: the read failed; it may be retried"), nil
	}
	if got.Outcome() != hybridctx.Resolved {
		return toolError(categorical(got, budget, r.tool)), nil
	}
	seg := got.Segment
	res := &mcp.CallToolResult{Meta: mcp.Meta{MetaOffset: got.Offset, MetaLength: got.Length, MetaBodySize: seg.BodySize()}}
	if b := seg.Bytes(); utf8.Valid(b) {
		res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
	} else {
		res.Content = []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: got.Ref.String(), MIMEType: r.binaryMIME(got.Ref), Blob: b}}}
	}
	return res, nil
}

// readResource serves resources/read of an artifact:// URI: the same owner,
// digest and budget checks, and the whole body must fit the budget.
func (r *reader) readResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	ctx = withReporter(ctx, r.reporter)
	got, err := r.reh.Rehydrate(ctx, hybridctx.Request{Reference: uri, Budget: r.budget, Source: hybridctx.SourceToolRequest})
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
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: categorical(got, r.budget, r.tool)}
	case hybridctx.Missing:
		return nil, &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: categorical(got, r.budget, r.tool)}
	case hybridctx.OverBudget:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"hybridctx: over_budget (budget_exceeded): the artifact is %d bytes, the budget %d; read it in pages with %s and offset/length",
			got.Length, r.budget, r.tool)}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: categorical(got, r.budget, r.tool)}
	}
	b := got.Segment.Bytes()
	c := &mcp.ResourceContents{URI: got.Ref.String()}
	switch {
	case utf8.Valid(b) && json.Valid(b):
		c.MIMEType, c.Text = mimeJSON, string(b)
	case utf8.Valid(b):
		c.MIMEType, c.Text = mimeText, string(b)
	default:
		c.MIMEType, c.Blob = r.binaryMIME(got.Ref), b
	}
	res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}
	res.CacheScope = "private" // owner-bound content
	return res, nil
}

func (r *reader) binaryMIME(ref artifact.Ref) string {
	if r.mimeOf != nil {
		if m := r.mimeOf(ref); m != "" && m != mimeText && m != mimeJSON {
			return m
		}
	}
	return mimeBinary
}

// categorical renders the one-line, privacy-safe message of an unresolved
// read: outcome, reason and what to do next.
func categorical(got *hybridctx.Rehydration, budget int64, tool string) string {
	var detail string
	switch got.Outcome() {
	case hybridctx.InvalidReference:
		detail = "expected artifact://sha256/ and 64 lowercase hex digits, the first line of a notice"
	case hybridctx.Unauthorized:
		detail = "this session has no stored result with that reference"
	case hybridctx.Missing:
		detail = "the stored body is gone; calling the original tool again restores it"
	case hybridctx.OverBudget:
		detail = fmt.Sprintf("the range is %d bytes, the budget %d; read with offset/length", got.Length, budget)
	case hybridctx.Stale:
		detail = "the stored body does not match its reference; nothing was returned; calling the original tool again restores it"
	}
	line := "hybridctx: " + got.Outcome().String() + " (" + got.Reason().String() + ")"
	if detail != "" {
		line += ": " + detail
	}
	return line
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
