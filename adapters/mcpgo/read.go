package mcpgo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
)

// ArtifactURITemplate is the resource template under which stored bodies
// are readable with resources/read.
const ArtifactURITemplate = "artifact://sha256/{hex}"

// ErrNilServer is returned by AddReadTools for a nil server.
var ErrNilServer = errors.New("mcpgo: nil server")

// ErrNilRehydrator is wrapped by the error of AddReadTools for a nil
// Rehydrator.
var ErrNilRehydrator = adaptkit.ErrNilRehydrator

// AddReadTools registers on s every read tool (read_artifact, under
// Options.ReadToolName, and its sibling views) and the resource template
// artifact://sha256/{hex}, all served by reh: the owner, digest and budget
// checks of an explicit rehydration. Refusals and malformed arguments are
// isError results with the categorical text; resolved bytes are text when
// they are valid UTF-8, else a base64 blob in an embedded resource.
// resources/read returns a whole body that fits the budget, and an error
// with the categorical text otherwise.
func AddReadTools(s *server.MCPServer, reh *hybridctx.Rehydrator, opts *Options) error {
	if s == nil {
		return ErrNilServer
	}
	reads, err := adaptkit.NewReads(reh, opts.readOptions())
	if err != nil {
		return err
	}
	for _, d := range reads.Tools() {
		t := mcp.NewToolWithRawSchema(d.Name, d.Description, d.InputSchema)
		yes, no := true, false
		t.Annotations = mcp.ToolAnnotation{ReadOnlyHint: &yes, IdempotentHint: &yes, OpenWorldHint: &no}
		name := d.Name
		s.AddTool(t, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			markRead(ctx)
			args := req.Params.RawArguments
			if len(args) == 0 {
				args = adaptkit.RawArgs(req.Params.Arguments)
			}
			a, err := reads.Call(ctx, name, args)
			if err != nil {
				return nil, err
			}
			return answerResult(a), nil
		})
	}
	readName := reads.Tools()[0].Name
	tmpl := mcp.NewResourceTemplate(ArtifactURITemplate, "artifact",
		mcp.WithTemplateDescription("A tool result stored outside the conversation; resources/read returns it whole when it fits the read budget."))
	s.AddResourceTemplate(tmpl, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		args, _ := json.Marshal(map[string]string{"reference": req.Params.URI})
		a, err := reads.Call(ctx, readName, args)
		if err != nil {
			return nil, err
		}
		if a.IsError {
			return nil, errors.New(a.Text)
		}
		return []mcp.ResourceContents{resourceContents(req.Params.URI, a.Segment.Bytes())}, nil
	})
	return nil
}

// answerResult renders a read answer as a tool result.
func answerResult(a adaptkit.Answer) *mcp.CallToolResult {
	if a.IsError {
		return mcp.NewToolResultError(a.Text)
	}
	if a.Segment == nil || utf8.ValidString(a.Text) {
		return mcp.NewToolResultText(a.Text)
	}
	seg := a.Segment
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.EmbeddedResource{Type: mcp.ContentTypeResource,
		Resource: mcp.BlobResourceContents{URI: seg.Ref().String(), MIMEType: mimeBinary,
			Blob: base64.StdEncoding.EncodeToString(seg.Bytes())}}},
		Result: mcp.Result{Meta: mcp.NewMetaFromMap(map[string]any{
			"hybridctx/offset": seg.Offset(), "hybridctx/length": len(seg.Bytes()), "hybridctx/body_size": seg.BodySize()})}}
}

func resourceContents(uri string, b []byte) mcp.ResourceContents {
	switch {
	case utf8.Valid(b) && json.Valid(b):
		return mcp.TextResourceContents{URI: uri, MIMEType: mimeJSON, Text: string(b)}
	case utf8.Valid(b):
		return mcp.TextResourceContents{URI: uri, MIMEType: mimeText, Text: string(b)}
	}
	return mcp.BlobResourceContents{URI: uri, MIMEType: mimeBinary, Blob: base64.StdEncoding.EncodeToString(b)}
}
