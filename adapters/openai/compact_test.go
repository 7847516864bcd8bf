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
