// Package openai adapts hybridctx to the OpenAI Go SDK
// (github.com/openai/openai-go/v3): a Handler answers the function tool
// calls of a Chat Completions or Responses API reply, running the host's
// tools with their results bounded by an Offloader and answering the read
// tools itself.
//
// Neither API has an error flag on a tool's output: a refusal or a tool
// failure is an ordinary output whose text is the categorical message.
//
// It lives in its own module so that the hybridctx core does not depend on
// the SDK.
package openai

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
)

// Options tune a Handler. A nil *Options means defaults. Budget caps every
// read (0: the read tools' default); Names overrides the read tools' names
// (empty names keep those of the Offloader's policy, the names its notices
// point to); OnDecision, when set, receives every offload decision with the
// tool name it decided, on the goroutine that called HandleChat or
// HandleResponse; Compaction, when set, is told of every compaction step
// of the policy's history budget (sink.Summary counts them).
type Options = adaptkit.HandlerOptions

// ErrNilOffloader is returned by New for a nil Offloader.
var ErrNilOffloader = adaptkit.ErrNilOffloader

// ErrNilRehydrator is returned by New for a nil Rehydrator.
var ErrNilRehydrator = adaptkit.ErrNilRehydrator

// Handler answers function tool calls for one binding: the Offloader's and
// the Rehydrator's. It is safe for concurrent use.
type Handler struct {
	calls *adaptkit.Dispatcher
	chat  []sdk.ChatCompletionToolUnionParam
	resp  []responses.ToolUnionParam
}

// New returns a Handler deciding results with off and serving the read
// tools with reh. Invalid read tool names are an error wrapping
// hybridctx.ErrInvalidPolicy.
func New(off *hybridctx.Offloader, reh *hybridctx.Rehydrator, opts *Options) (*Handler, error) {
	calls, err := adaptkit.NewHandlerDispatcher(off, reh, opts)
	if err != nil {
		return nil, err
	}
	h := &Handler{calls: calls}
	for _, d := range calls.Tools() {
		var params map[string]any
		if err := json.Unmarshal(d.InputSchema, &params); err != nil {
			return nil, fmt.Errorf("openai adapter: read tool schema: %w", err)
		}
		h.chat = append(h.chat, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: d.Name, Description: sdk.String(d.Description), Parameters: params}))
		h.resp = append(h.resp, responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
			Name: d.Name, Description: sdk.String(d.Description), Parameters: params, Strict: sdk.Bool(false)}})
	}
	return h, nil
}

// ChatTools returns the read tools' definitions for a Chat Completions
// request's tools.
func (h *Handler) ChatTools() []sdk.ChatCompletionToolUnionParam {
	return append([]sdk.ChatCompletionToolUnionParam(nil), h.chat...)
}

// ResponseTools returns the read tools' definitions for a Responses API
// request's tools.
func (h *Handler) ResponseTools() []responses.ToolUnionParam {
	return append([]responses.ToolUnionParam(nil), h.resp...)
}

// RunFunc runs one of the host's tools with the model's JSON arguments and
// returns its result text. An error is a tool failure; its text never
// reaches the model.
type RunFunc func(ctx context.Context, name string, input json.RawMessage) (string, error)

// HandleChat answers one Chat Completions function tool call with its tool
// message. A read tool call is answered by the Handler (the verified bytes
// or the categorical refusal); any other tool runs through run and its
// result is decided with the Offloader: inline, or the bounded notice in
// its place. An error from run (or a nil run, or a context cancelled
// before the decision) becomes the categorical failure notice, never the
// error's text.
func (h *Handler) HandleChat(ctx context.Context, call sdk.ChatCompletionMessageFunctionToolCall, run RunFunc) sdk.ChatCompletionMessageParamUnion {
	r := h.calls.Handle(ctx, call.ID, call.Function.Name, adaptkit.RawArgs(call.Function.Arguments), run)
	return sdk.ToolMessage(r.Text, call.ID)
}

// HandleResponse answers one Responses API function call with its
// function_call_output item, like HandleChat.
func (h *Handler) HandleResponse(ctx context.Context, call responses.ResponseFunctionToolCall, run RunFunc) responses.ResponseInputItemUnionParam {
	r := h.calls.Handle(ctx, call.CallID, call.Name, adaptkit.RawArgs(call.Arguments), run)
	item := responses.ResponseInputItemParamOfFunctionCallOutput(r.Text)
	item.OfFunctionCallOutput.CallID = sdk.String(call.CallID)
	return item
}
