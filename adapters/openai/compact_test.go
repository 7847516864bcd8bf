package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	hybridopenai "github.com/hybridctx/hybridctx/adapters/openai"
)

func budgetHandler(t *testing.T, budget int64) *hybridopenai.Handler {
	t.Helper()
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: adapttest.Threshold,
		History: hybridctx.HistoryPolicy{Budget: budget, LowWater: budget / 2, KeepRecent: 2}})
	h, err := hybridopenai.New(env.Off, env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func logBody(i int) string {
	return fmt.Sprintf("log %d\n", i) + strings.Repeat(fmt.Sprintf("line of log %d\n", i), 150)
}

func runText(text string) hybridopenai.RunFunc {
	return func(context.Context, string, json.RawMessage) (string, error) { return text, nil }
}

// readBack reads a mask back through the handler's read tool.
func readBack(t *testing.T, h *hybridopenai.Handler, mask string) string {
	t.Helper()
	st, ok := hybridctx.ParseStoredText(mask)
	if !ok || !st.Masked || len(mask) > hybridctx.MaxMaskLen {
		t.Fatalf("not a mask: %q", mask)
	}
	args, _ := json.Marshal(map[string]any{"reference": st.Ref.String(), "offset": 0, "length": st.Size, "max_bytes": st.Size})
	m := h.HandleChat(context.Background(), sdk.ChatCompletionMessageFunctionToolCall{ID: "r",
		Function: sdk.ChatCompletionMessageFunctionToolCallFunction{Name: hybridctx.DefaultReadToolName, Arguments: string(args)}}, nil)
	return m.OfTool.Content.OfString.Value
}

func TestCompactChat(t *testing.T) {
	h := budgetHandler(t, 8192)
	ctx := context.Background()
	msgs := []sdk.ChatCompletionMessageParamUnion{sdk.SystemMessage("You read logs."), sdk.UserMessage("Why?")}
	var bodies []string
	for i := range 10 {
		id := fmt.Sprintf("call_%d", i)
		bodies = append(bodies, logBody(i))
		msgs = append(msgs, sdk.ChatCompletionMessageParamUnion{OfAssistant: &sdk.ChatCompletionAssistantMessageParam{
			ToolCalls: []sdk.ChatCompletionMessageToolCallUnionParam{{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID: id, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "fetch", Arguments: "{}"}}}}}})
		msgs = append(msgs, h.HandleChat(ctx, sdk.ChatCompletionMessageFunctionToolCall{ID: id,
			Function: sdk.ChatCompletionMessageFunctionToolCallFunction{Name: "fetch", Arguments: "{}"}}, runText(bodies[i])))
	}
	before := mustJSON(t, msgs)
	out, err := h.CompactChat(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, msgs) != before || len(out) != len(msgs) {
		t.Fatal("input modified, or messages added or dropped")
	}
	// Through the SDK's encoding: roles and tool_call_ids as they were.
	var wire struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(mustJSON(t, sdk.ChatCompletionNewParams{Model: "m", Messages: out})), &wire); err != nil {
		t.Fatal(err)
	}
	var orig struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	_ = json.Unmarshal([]byte(mustJSON(t, sdk.ChatCompletionNewParams{Model: "m", Messages: msgs})), &orig)
	masked, tool := 0, 0
	for i, m := range wire.Messages {
		if m.Role != orig.Messages[i].Role || m.ToolCallID != orig.Messages[i].ToolCallID {
			t.Fatalf("message %d changed role or call id", i)
		}
		if m.Role != "tool" {
			continue
		}
		text := m.Content.(string)
		tool += len(text)
		k := (i - 3) / 2
		if _, ok := hybridctx.ParseStoredText(text); ok {
			masked++
			if k >= 8 || readBack(t, h, text) != bodies[k] {
				t.Fatalf("mask %d does not read back its result", k)
			}
		}
	}
	if masked == 0 || tool > 8192 {
		t.Fatalf("%d masked, tool content %d", masked, tool)
	}
	again, err := h.CompactChat(ctx, out)
	if err != nil || mustJSON(t, again) != mustJSON(t, out) {
		t.Fatalf("compacting again changed the history: %v", err)
	}
	orphan := append(out, sdk.ToolMessage(strings.Repeat("x", 9000), "call_none"))
	if got, err := h.CompactChat(ctx, orphan); !errors.Is(err, hybridctx.ErrInvalidHistory) || mustJSON(t, got) != mustJSON(t, orphan) {
		t.Fatalf("orphan: %v", err)
	}
	// A tool message placed before the assistant message with its call.
	swapped := append([]sdk.ChatCompletionMessageParamUnion{out[0], out[1], out[3], out[2]}, out[4:]...)
	if got, err := h.CompactChat(ctx, swapped); !errors.Is(err, hybridctx.ErrInvalidHistory) || mustJSON(t, got) != mustJSON(t, swapped) {
		t.Fatalf("result before its call: %v", err)
	}
}

func TestCompactResponse(t *testing.T) {
	h := budgetHandler(t, 8192)
	ctx := context.Background()
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Why?", responses.EasyInputMessageRoleUser)}
	var bodies []string
	for i := range 10 {
		id := fmt.Sprintf("call_%d", i)
		bodies = append(bodies, logBody(i))
		input = append(input, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
			CallID: id, Name: "fetch", Arguments: "{}"}})
		input = append(input, h.HandleResponse(ctx, responses.ResponseFunctionToolCall{CallID: id, Name: "fetch", Arguments: "{}"}, runText(bodies[i])))
	}
	before := mustJSON(t, input)
	out, err := h.CompactResponse(ctx, input)
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, input) != before || len(out) != len(input) {
		t.Fatal("input modified, or items added or dropped")
	}
	var wire []struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output any    `json:"output"`
	}
	if err := json.Unmarshal([]byte(mustJSON(t, out)), &wire); err != nil {
		t.Fatal(err)
	}
	masked := 0
	for i, it := range wire {
		if it.Type != "function_call_output" {
			continue
		}
		k := (i - 2) / 2
		if it.CallID != fmt.Sprintf("call_%d", k) {
			t.Fatalf("item %d answers %q", i, it.CallID)
		}
		if text := it.Output.(string); strings.HasPrefix(text, "artifact://") && len(text) <= hybridctx.MaxMaskLen {
			masked++
			if readBack(t, h, text) != bodies[k] {
				t.Fatalf("mask %d does not read back", k)
			}
		}
	}
	if masked == 0 {
		t.Fatal("nothing masked")
	}
	twice := append(out, out[2])
	if _, err := h.CompactResponse(ctx, twice); !errors.Is(err, hybridctx.ErrInvalidHistory) {
		t.Fatalf("two outputs for one call: %v", err)
	}
	swapped := append(responses.ResponseInputParam{out[0], out[2], out[1]}, out[3:]...)
	if _, err := h.CompactResponse(ctx, swapped); !errors.Is(err, hybridctx.ErrInvalidHistory) {
		t.Fatalf("an output before its call: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if got, err := h.CompactResponse(cctx, input); !errors.Is(err, context.Canceled) || mustJSON(t, got) != before {
		t.Fatalf("cancelled: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// inputsHandler is a handler whose policy masks tool inputs.
func inputsHandler(t *testing.T) (*hybridopenai.Handler, *adapttest.Env) {
	t.Helper()
	env := adapttest.New(t, adapttest.InputsPolicy())
	h, err := hybridopenai.New(env.Off, env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h, env
}

// TestCompactChatInputs: with MaskInputs the content of a write-file call
// in a model reply (ChatCompletionMessage.ToParam) is masked once answered,
// the arguments still JSON of the same shape whose mask reads back the
// content byte-exact through the read tool; the other call of the reply
// and msgs stay, and compacting again changes nothing.
func TestCompactChatInputs(t *testing.T) {
	h, env := inputsHandler(t)
	ctx := context.Background()
	content := adapttest.FileContent()
	args := adapttest.WriteFileArgs(content)
	calls, _ := json.Marshal([]map[string]any{
		{"id": "call_w", "type": "function", "function": map[string]string{"name": adapttest.WriteTool, "arguments": args}},
		{"id": "call_s", "type": "function", "function": map[string]string{"name": "stat", "arguments": `{"path":"notes"}`}},
	})
	var reply sdk.ChatCompletionMessage
	if err := json.Unmarshal([]byte(`{"role":"assistant","content":null,"refusal":null,"tool_calls":`+string(calls)+`}`), &reply); err != nil {
		t.Fatal(err)
	}
	msgs := []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Write the notes."), reply.ToParam()}
	for _, tc := range reply.ToolCalls {
		msgs = append(msgs, h.HandleChat(ctx, tc.AsFunction(), runText("done")))
	}
	before := mustJSON(t, msgs)
	out, err := h.CompactChat(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, msgs) != before {
		t.Fatal("CompactChat modified its input")
	}
	raw, err := json.Marshal(sdk.ChatCompletionNewParams{Model: "m", Messages: out})
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Messages []struct {
			ToolCalls []struct {
				ID       string                     `json:"id"`
				Function struct{ Arguments string } `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatal(err)
	}
	tcs := wire.Messages[1].ToolCalls
	if len(tcs) != 2 || tcs[0].ID != "call_w" || tcs[1].ID != "call_s" {
		t.Fatalf("tool calls %+v", tcs)
	}
	masked := tcs[0].Function.Arguments
	if err := env.CheckMaskedArgs(ctx, []byte(args), []byte(masked), content); err != nil {
		t.Fatal(err)
	}
	var in struct{ Content string }
	_ = json.Unmarshal([]byte(masked), &in)
	if got := readBack(t, h, in.Content); got != content {
		t.Fatalf("the read tool gave back %d bytes, want %d", len(got), len(content))
	}
	if tcs[1].Function.Arguments != `{"path":"notes"}` || mustJSON(t, out[2:]) != mustJSON(t, msgs[2:]) {
		t.Fatal("a short input or a tool message changed")
	}
	again, err := h.CompactChat(ctx, out)
	if err != nil || mustJSON(t, again) != mustJSON(t, out) {
		t.Fatalf("compacting again changed the history (%v)", err)
	}
}

// TestCompactResponseInputs is TestCompactChatInputs for a Responses API
// input: the function_call item's arguments.
func TestCompactResponseInputs(t *testing.T) {
	h, env := inputsHandler(t)
	ctx := context.Background()
	content := adapttest.FileContent()
	args := adapttest.WriteFileArgs(content)
	item, _ := json.Marshal(map[string]string{"type": "function_call", "id": "fc_1", "call_id": "call_w", "name": adapttest.WriteTool,
		"arguments": args, "status": "completed"})
	var call responses.ResponseFunctionToolCall // as the model's reply holds it
	if err := json.Unmarshal(item, &call); err != nil {
		t.Fatal(err)
	}
	// ToParam gives an override whose fields are empty; the host copies them.
	p := responses.ResponseFunctionToolCallParam{ID: sdk.String(call.ID), CallID: call.CallID, Name: call.Name, Arguments: call.Arguments}
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Write the notes.", responses.EasyInputMessageRoleUser),
		{OfFunctionCall: &p},
		h.HandleResponse(ctx, call, runText("done")),
	}
	before := mustJSON(t, input)
	out, err := h.CompactResponse(ctx, input)
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, input) != before {
		t.Fatal("CompactResponse modified its input")
	}
	raw, err := json.Marshal(responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: out}})
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Input []struct {
			Type      string `json:"type"`
			Arguments string `json:"arguments"`
		} `json:"input"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatal(err)
	}
	if wire.Input[1].Type != "function_call" {
		t.Fatalf("item 1 is %q", wire.Input[1].Type)
	}
	masked := wire.Input[1].Arguments
	if err := env.CheckMaskedArgs(ctx, []byte(args), []byte(masked), content); err != nil {
		t.Fatal(err)
	}
	var in struct{ Content string }
	_ = json.Unmarshal([]byte(masked), &in)
	if got := readBack(t, h, in.Content); got != content {
		t.Fatalf("the read tool gave back %d bytes, want %d", len(got), len(content))
	}
	again, err := h.CompactResponse(ctx, out)
	if err != nil || mustJSON(t, again) != mustJSON(t, out) {
		t.Fatalf("compacting again changed the history (%v)", err)
	}
}
