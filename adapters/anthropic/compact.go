package anthropic

import (
	"context"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
)

// Compact applies the Offloader policy's history budget (see
// docs/history.md) to msgs, one call before each model call: while the
// tool results' content is within the budget it returns msgs as they are;
// once over it, older results are masked (a mask of at most
// hybridctx.MaxMaskLen bytes that the read tools resolve), down to the low
// water mark, in one step. With the policy's HistoryPolicy.MaskInputs, the
// long strings of each answered tool_use's input are masked too
// (docs/history.md, "Tool inputs"): the input keeps its Go type (a
// json.RawMessage as sdk.Message.ToParam gives it, a map, a struct) and
// its JSON shape. Only tool_result content and tool_use input change:
// messages, roles, blocks and tool_use ids stay, and every tool_result
// still answers its tool_use. A result holding anything but text is never
// masked. The returned slice shares the messages that did not change; msgs
// itself is never modified.
//
// The error wraps hybridctx.ErrInvalidHistory for a tool_result without
// its tool_use, two tool_results for one tool_use or a tool_use without a
// result, or is the context's; msgs is then returned unchanged.
func (h *Handler) Compact(ctx context.Context, msgs []sdk.MessageParam) ([]sdk.MessageParam, error) {
	var calls []adaptkit.ToolCall
	var results []adaptkit.ToolText
	var at, callAt [][2]int // message and block of each result, of each call
	for i, m := range msgs {
		for j, b := range blocks(m) {
			switch {
			case b.OfToolUse != nil:
				calls = append(calls, adaptkit.ToolCall{ID: b.OfToolUse.ID, Tool: b.OfToolUse.Name, Value: b.OfToolUse.Input})
				callAt = append(callAt, [2]int{i, j})
			case b.OfToolResult != nil:
				text, ok := onlyText(b.OfToolResult.Content)
				results = append(results, adaptkit.ToolText{CallsBefore: len(calls), CallID: b.OfToolResult.ToolUseID, Text: text, Keep: !ok})
				at = append(at, [2]int{i, j})
			}
		}
	}
	res, err := h.calls.Compact(ctx, calls, results)
	if err != nil || res == nil {
		return msgs, err
	}
	out := append([]sdk.MessageParam(nil), msgs...)
	copied := map[int][]sdk.ContentBlockParamUnion{}
	block := func(i int) []sdk.ContentBlockParamUnion {
		bs, ok := copied[i]
		if !ok {
			bs = append([]sdk.ContentBlockParamUnion(nil), blocks(out[i])...)
			copied[i] = bs
			out[i] = withBlocks(out[i], bs)
		}
		return bs
	}
	for k, c := range res.Changed {
		if !c {
			continue
		}
		bs := block(at[k][0])
		tr := *bs[at[k][1]].OfToolResult
		tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: res.Texts[k]}}}
		bs[at[k][1]] = sdk.ContentBlockParamUnion{OfToolResult: &tr}
	}
	for k, a := range res.Calls {
		if !a.Changed {
			continue
		}
		bs := block(callAt[k][0])
		tu := *bs[callAt[k][1]].OfToolUse
		tu.Input = a.Value
		bs[callAt[k][1]] = sdk.ContentBlockParamUnion{OfToolUse: &tu}
	}
	return out, nil
}

// blocks returns the content blocks of a user or assistant message.
func blocks(m sdk.MessageParam) []sdk.ContentBlockParamUnion {
	switch {
	case m.OfUser != nil:
		return m.OfUser.Content
	case m.OfAssistant != nil:
		return m.OfAssistant.Content
	}
	return nil
}

// withBlocks returns a copy of m holding bs.
func withBlocks(m sdk.MessageParam, bs []sdk.ContentBlockParamUnion) sdk.MessageParam {
	if m.OfUser != nil {
		u := *m.OfUser
		u.Content = bs
		return sdk.MessageParam{OfUser: &u}
	}
	a := *m.OfAssistant
	a.Content = bs
	return sdk.MessageParam{OfAssistant: &a}
}

// onlyText returns the text of a tool_result's content when every block is
// text (joined without separator), and false otherwise.
func onlyText(c []sdk.ToolResultBlockParamContentUnion) (string, bool) {
	if len(c) == 1 && c[0].OfText != nil {
		return c[0].OfText.Text, true
	}
	var b strings.Builder
	for _, p := range c {
		if p.OfText == nil {
			return "", false
		}
		b.WriteString(p.OfText.Text)
	}
	return b.String(), len(c) > 0
}
