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
// returns msgs as they are; once over it, older tool messages are
// masked (a mask of at most hybridctx.MaxMaskLen bytes that the read tools
// resolve), down to the low water mark, in one step. Only tool message
// content changes: every message, role and tool_call_id stays, and every
// tool message still answers its call. With the policy's
// HistoryPolicy.MaskInputs, the long strings of each answered function
// call's arguments are masked too (docs/history.md, "Tool inputs"), the
// arguments still a JSON text of the same shape; a custom tool's free-text
// input is not. msgs itself is never modified; the returned slice shares
// the messages that did not change.
//
// The error wraps hybridctx.ErrInvalidHistory for a tool message without
// its call, two for one call or a call without its tool message, or is the
// context's; msgs is then returned unchanged.
func (h *Handler) CompactChat(ctx context.Context, msgs []sdk.ChatCompletionMessageParamUnion) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var calls []adaptkit.ToolCall
	var results []adaptkit.ToolText
	var at []int
	var callAt [][2]int // message and tool call of each call
	for i, m := range msgs {
		switch {
		case m.OfAssistant != nil:
			for j, c := range m.OfAssistant.ToolCalls {
				switch {
				case c.OfFunction != nil:
					calls = append(calls, adaptkit.ToolCall{ID: c.OfFunction.ID, Tool: c.OfFunction.Function.Name, Args: c.OfFunction.Function.Arguments})
				case c.OfCustom != nil:
					// A custom tool's input is free text, not JSON arguments.
					calls = append(calls, adaptkit.ToolCall{ID: c.OfCustom.ID, Tool: c.OfCustom.Custom.Name})
				default:
					continue
				}
				callAt = append(callAt, [2]int{i, j})
			}
		case m.OfTool != nil:
			text, ok := chatText(m.OfTool.Content)
			results = append(results, adaptkit.ToolText{CallsBefore: len(calls), CallID: m.OfTool.ToolCallID, Text: text, Keep: !ok})
			at = append(at, i)
		}
	}
	res, err := h.calls.Compact(ctx, calls, results)
	if err != nil || res == nil {
		return msgs, err
	}
	out := append([]sdk.ChatCompletionMessageParamUnion(nil), msgs...)
	for k, c := range res.Changed {
		if c {
			tm := *out[at[k]].OfTool
			tm.Content = sdk.ChatCompletionToolMessageParamContentUnion{OfString: sdk.String(res.Texts[k])}
			out[at[k]] = sdk.ChatCompletionMessageParamUnion{OfTool: &tm}
		}
	}
	copied := map[int]bool{}
	for k, a := range res.Calls {
		if !a.Changed {
			continue
		}
		i, j := callAt[k][0], callAt[k][1]
		if !copied[i] {
			am := *out[i].OfAssistant
			am.ToolCalls = append([]sdk.ChatCompletionMessageToolCallUnionParam(nil), am.ToolCalls...)
			out[i] = sdk.ChatCompletionMessageParamUnion{OfAssistant: &am}
			copied[i] = true
		}
		fc := *out[i].OfAssistant.ToolCalls[j].OfFunction
		fc.Function.Arguments = a.Args
		out[i].OfAssistant.ToolCalls[j] = sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &fc}
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
// function_call_output items' output changes, and with MaskInputs the
// function_call items' arguments, nothing else. An output that
// is not a string (images, files) is never masked.
func (h *Handler) CompactResponse(ctx context.Context, input responses.ResponseInputParam) (responses.ResponseInputParam, error) {
	var calls []adaptkit.ToolCall
	var results []adaptkit.ToolText
	var at, callAt []int
	for i, it := range input {
		switch {
		case it.OfFunctionCall != nil:
			calls = append(calls, adaptkit.ToolCall{ID: it.OfFunctionCall.CallID, Tool: it.OfFunctionCall.Name, Args: it.OfFunctionCall.Arguments})
			callAt = append(callAt, i)
		case it.OfFunctionCallOutput != nil:
			o := it.OfFunctionCallOutput
			results = append(results, adaptkit.ToolText{CallsBefore: len(calls), CallID: o.CallID.Value, Text: o.Output.OfString.Value, Keep: !o.Output.OfString.Valid()})
			at = append(at, i)
		}
	}
	res, err := h.calls.Compact(ctx, calls, results)
	if err != nil || res == nil {
		return input, err
	}
	out := append(responses.ResponseInputParam(nil), input...)
	for k, c := range res.Changed {
		if c {
			o := *out[at[k]].OfFunctionCallOutput
			o.Output = responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: sdk.String(res.Texts[k])}
			out[at[k]] = responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &o}
		}
	}
	for k, a := range res.Calls {
		if a.Changed {
			fc := *out[callAt[k]].OfFunctionCall
			fc.Arguments = a.Args
			out[callAt[k]] = responses.ResponseInputItemUnionParam{OfFunctionCall: &fc}
		}
	}
	return out, nil
}
