// Package anthropic adapts hybridctx to the Anthropic Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2): a Handler answers the
// tool_use blocks of a Messages API reply, running the host's tools with
// their results bounded by an Offloader and answering the read tools itself,
// and wraps the beta tool runner's tools the same way.
//
// It lives in its own module so that the hybridctx core does not depend on
// the SDK.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/readtools"
)

// Options tune a Handler. A nil *Options means defaults. Budget caps every
// read (0: the read tools' default); Names overrides the read tools' names
// (empty names keep those of the Offloader's policy, the names its notices
// point to); OnDecision, when set, receives every offload decision with the
// tool name it decided, on the goroutine that called Handle; Compaction,
// when set, is told of every compaction step of the policy's history
// budget (sink.Summary counts them).
type Options = adaptkit.HandlerOptions

// ErrNilOffloader is returned by New for a nil Offloader.
var ErrNilOffloader = adaptkit.ErrNilOffloader

// ErrNilRehydrator is returned by New for a nil Rehydrator.
var ErrNilRehydrator = adaptkit.ErrNilRehydrator

// Handler answers tool calls for one binding: the Offloader's and the
// Rehydrator's. It is safe for concurrent use.
type Handler struct {
	calls *adaptkit.Dispatcher
	tools []sdk.ToolUnionParam
}

// New returns a Handler deciding results with off and serving the read
// tools with reh. Invalid read tool names are an error wrapping
// hybridctx.ErrInvalidPolicy.
func New(off *hybridctx.Offloader, reh *hybridctx.Rehydrator, opts *Options) (*Handler, error) {
	calls, err := adaptkit.NewHandlerDispatcher(off, reh, opts)
	if err != nil {
		return nil, err
	}
	tools, err := toolParams(calls.Tools())
	if err != nil {
		return nil, err
	}
	return &Handler{calls: calls, tools: tools}, nil
}

// toolParams converts the read tools' definitions into the SDK's.
func toolParams(defs []readtools.Tool) ([]sdk.ToolUnionParam, error) {
	var tools []sdk.ToolUnionParam
	for _, d := range defs {
		schema, err := inputSchema(d.InputSchema)
		if err != nil {
			return nil, err
		}
		tools = append(tools, sdk.ToolUnionParam{OfTool: &sdk.ToolParam{
			Name: d.Name, Description: sdk.String(d.Description), InputSchema: schema}})
	}
	return tools, nil
}

// inputSchema converts a JSON schema object into the SDK's input schema:
// properties and required in their fields, every other keyword (such as
// additionalProperties) as an extra field.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return sdk.ToolInputSchemaParam{}, fmt.Errorf("anthropic adapter: read tool schema: %w", err)
	}
	s := sdk.ToolInputSchemaParam{Properties: m["properties"]}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	delete(m, "properties")
	delete(m, "required")
	delete(m, "type")
	if len(m) > 0 {
		s.ExtraFields = m
	}
	return s, nil
}

// Tools returns the read tools' definitions, to append to the request's
// tools.
func (h *Handler) Tools() []sdk.ToolUnionParam {
	return append([]sdk.ToolUnionParam(nil), h.tools...)
}

// RunFunc runs one of the host's tools with the model's JSON input and
// returns its result text. An error is a tool failure; its text never
// reaches the model.
type RunFunc func(ctx context.Context, name string, input json.RawMessage) (string, error)

// Handle answers one tool_use block with its tool_result block. A read
// tool call is answered by the Handler: the verified bytes, or the
// categorical refusal as an is_error result. Any other tool runs through
// run, and its result is decided with the Offloader: inline, or the
// bounded notice in its place. An error from run (or a nil run) becomes an
// is_error result holding the categorical failure notice, never the
// error's text; so does a context cancelled before the decision.
func (h *Handler) Handle(ctx context.Context, block sdk.ToolUseBlock, run RunFunc) sdk.ContentBlockParamUnion {
	r := h.handle(ctx, block.ID, block.Name, block.Input, run)
	return sdk.NewToolResultBlock(block.ID, r.Text, r.IsError)
}

// handle is Handle without the SDK's block types; the SDK leaves an empty
// input empty.
func (h *Handler) handle(ctx context.Context, id, name string, input json.RawMessage, run RunFunc) adaptkit.Result {
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	return h.calls.Handle(ctx, id, name, input, run)
}
