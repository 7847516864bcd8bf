package openai

import (
	"context"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
)

// CompactChat applies the Offloader policy's history budget (see
// docs/history.md) to a Chat Completions history, one call before each
// model call: while the tool messages' content is within the budget it
// returns msgs as they are; once over it, the oldest tool messages are
// masked (a mask of at most hybridctx.MaxMaskLen bytes that the read tools
// resolve), down to the low water mark, in one step. Only tool message
// content changes: every message, role and tool_call_id stays, and every
// tool message still answers its call. msgs itself is never modified; the
// returned slice shares the messages that did not change.
//
// The error wraps hybridctx.ErrInvalidHistory for a tool message without
// its call, two for one call or a call without its tool message, or is the
// context's; msgs is then returned unchanged.
func (h *Handler) CompactChat(ctx context.Context, msgs []sdk.ChatCompletionMessageParamUnion) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var calls []adaptkit.ToolCall
	var results []adaptkit.ToolText
	var at []int
	for i, m := range msgs {
		switch {
		case m.OfAssistant != nil:
			for _, c := range m.OfAssistant.ToolCalls {
				switch {
				case c.OfFunction != nil:
					calls = append(calls, adaptkit.ToolCall{ID: c.OfFunction.ID, Tool: c.OfFunction.Function.Name})
				case c.OfCustom != nil:
					calls = append(calls, adaptkit.ToolCall{ID: c.OfCustom.ID, Tool: c.OfCustom.Custom.Name})
				}
			}
		case m.OfTool != nil:
			text, ok := chatText(m.OfTool.Content)
			results = append(results, adaptkit.ToolText{CallID: m.OfTool.ToolCallID, Text: text, Keep: !ok})
			at = append(at, i)
		}
	}
	texts, changed, err := h.calls.Compact(ctx, calls, results)
	if err != nil || texts == nil {
		return msgs, err
	}
	out := append([]sdk.ChatCompletionMessageParamUnion(nil), msgs...)
	for k, c := range changed {
		if c {
			tm := *out[at[k]].OfTool
			tm.Content = sdk.ChatCompletionToolMessageParamContentUnion{OfString: sdk.String(texts[k])}
			out[at[k]] = sdk.ChatCompletionMessageParamUnion{OfTool: &tm}
		}
	}
	return out, nil
}

// chatText returns a tool message's text: the string, or its text parts
// joined.
func chatText(c sdk.ChatCompletionToolMessageParamContentUnion) (string, bool) {
	if c.OfString.Valid() {
		return c.OfString.Value, true
	}
	var b strings.Builder
	for _, p := range c.OfArrayOfContentParts {
		b.WriteString(p.Text)
	}
	return b.String(), len(c.OfArrayOfContentParts) > 0
}

// CompactResponse is CompactChat for a Responses API input: the
// function_call_output items' output changes, nothing else. An output that
// is not a string (images, files) is never masked.
func (h *Handler) CompactResponse(ctx context.Context, input responses.ResponseInputParam) (responses.ResponseInputParam, error) {
	var calls []adaptkit.ToolCall
	var results []adaptkit.ToolText
	var at []int
	for i, it := range input {
		switch {
		case it.OfFunctionCall != nil:
			calls = append(calls, adaptkit.ToolCall{ID: it.OfFunctionCall.CallID, Tool: it.OfFunctionCall.Name})
		case it.OfFunctionCallOutput != nil:
			o := it.OfFunctionCallOutput
			results = append(results, adaptkit.ToolText{CallID: o.CallID.Value, Text: o.Output.OfString.Value, Keep: !o.Output.OfString.Valid()})
			at = append(at, i)
		}
	}
	texts, changed, err := h.calls.Compact(ctx, calls, results)
	if err != nil || texts == nil {
		return input, err
	}
	out := append(responses.ResponseInputParam(nil), input...)
	for k, c := range changed {
		if c {
			o := *out[at[k]].OfFunctionCallOutput
			o.Output = responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: sdk.String(texts[k])}
			out[at[k]] = responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &o}
		}
	}
	return out, nil
}
