package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/hybridctx/hybridctx"
	hybridanthropic "github.com/hybridctx/hybridctx/adapters/anthropic"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	"github.com/hybridctx/hybridctx/sink"
)

// budgetHistory builds n turns of the SDK's messages: an assistant
// tool_use, then a user message with its tool_result, answered by h.
func budgetHistory(t *testing.T, h *hybridanthropic.Handler, n int) ([]sdk.MessageParam, []string) {
	t.Helper()
	msgs := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Look at the logs."))}
	var bodies []string
	for i := range n {
		id := fmt.Sprintf("toolu_%02d", i)
		body := fmt.Sprintf("log %d\n", i) + strings.Repeat(fmt.Sprintf("line of log %d\n", i), 150)
		bodies = append(bodies, body)
		msgs = append(msgs, sdk.NewAssistantMessage(sdk.NewTextBlock("fetching"), sdk.NewToolUseBlock(id, map[string]any{"n": i}, "fetch")))
		block := h.Handle(context.Background(), sdk.ToolUseBlock{ID: id, Name: "fetch", Input: json.RawMessage(`{}`)},
			func(context.Context, string, json.RawMessage) (string, error) { return body, nil })
		msgs = append(msgs, sdk.NewUserMessage(block))
	}
	return msgs, bodies
}

func TestCompact(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: adapttest.Threshold,
		History: hybridctx.HistoryPolicy{Budget: 8192, LowWater: 4096, KeepRecent: 2}})
	sum := sink.NewSummary()
	h, err := hybridanthropic.New(env.Off, env.Reh, &hybridanthropic.Options{Compaction: sum})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	msgs, bodies := budgetHistory(t, h, 10)
	before, _ := json.Marshal(msgs)
	out, err := h.Compact(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(msgs); string(after) != string(before) {
		t.Fatal("Compact modified its input")
	}
	if len(out) != len(msgs) {
		t.Fatalf("%d messages, want %d", len(out), len(msgs))
	}
	// Through the SDK's own encoding: roles, tool_use ids and pairing kept.
	raw, err := json.Marshal(sdk.MessageNewParams{Model: "m", MaxTokens: 1, Messages: out})
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
				Content   []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	var texts []string
	for i, m := range wire.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			t.Fatalf("message %d role %q", i, m.Role)
		}
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				open[b.ID] = true
			case "tool_result":
				if !open[b.ToolUseID] {
					t.Fatalf("tool_result %s answers no open tool_use", b.ToolUseID)
				}
				delete(open, b.ToolUseID)
				texts = append(texts, b.Content[0].Text)
			}
		}
	}
	if len(texts) != 10 || len(open) != 0 {
		t.Fatalf("%d results, %d open calls", len(texts), len(open))
	}
	var tool int
	masked := 0
	for i, text := range texts {
		tool += len(text)
		st, ok := hybridctx.ParseStoredText(text)
		if i >= 8 && ok {
			t.Fatalf("recent result %d masked", i)
		}
		if !ok {
			continue
		}
		masked++
		if len(text) > hybridctx.MaxMaskLen || !st.Masked {
			t.Fatalf("mask %q", text)
		}
		// The model reads it back through the handler's read tool.
		args, _ := json.Marshal(map[string]any{"reference": st.Ref.String(), "offset": 0, "length": st.Size, "max_bytes": st.Size})
		back := h.Handle(ctx, sdk.ToolUseBlock{ID: "r", Name: hybridctx.DefaultReadToolName, Input: args}, nil)
		if got, isErr := resultOf(t, back); isErr || got != bodies[i] {
			t.Fatalf("mask %d read back %d bytes (error %v), want its %d", i, len(got), isErr, len(bodies[i]))
		}
	}
	if masked == 0 || tool > 8192 {
		t.Fatalf("%d masked, tool content %d", masked, tool)
	}
	if r := sum.Report().History; r.Compactions != 1 || r.Masked != int64(masked) || r.BytesTakenOut <= 0 {
		t.Fatalf("run summary %+v", r)
	}
	// Compacting again changes nothing.
	again, err := h.Compact(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, again), mustJSON(t, out); a != b {
		t.Fatal("a compacted history compacted again changed")
	}
}

func TestCompactRefusesBrokenPairing(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: adapttest.Threshold, History: hybridctx.HistoryPolicy{Budget: 100}})
	h, _ := hybridanthropic.New(env.Off, env.Reh, nil)
	msgs, _ := budgetHistory(t, h, 3)
	orphan := append(msgs, sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_none", strings.Repeat("x", 5000), false)))
	out, err := h.Compact(context.Background(), orphan)
	if !errors.Is(err, hybridctx.ErrInvalidHistory) || len(out) != len(orphan) || mustJSON(t, out) != mustJSON(t, orphan) {
		t.Fatalf("orphan result: %v", err)
	}
	twice := append(msgs, msgs[2])
	if _, err := h.Compact(context.Background(), twice); !errors.Is(err, hybridctx.ErrInvalidHistory) {
		t.Fatalf("two results: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out, err := h.Compact(ctx, msgs); !errors.Is(err, context.Canceled) || mustJSON(t, out) != mustJSON(t, msgs) {
		t.Fatalf("cancelled: %v", err)
	}
	// Without a budget the messages come back as they are.
	plain, _ := hybridanthropic.New(adapttest.New(t, nil).Off, env.Reh, nil)
	if out, err := plain.Compact(context.Background(), msgs); err != nil || &out[0] != &msgs[0] {
		t.Fatalf("no budget: %v", err)
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

// TestCompactTwoTextBlocks: a tool_result of two text blocks, an earlier
// result's notice and then more text, is stored whole before it is masked:
// its mask reads back both blocks, not only the notice's body.
func TestCompactTwoTextBlocks(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: adapttest.Threshold,
		History: hybridctx.HistoryPolicy{Budget: 100, KeepRecent: -1}})
	h, _ := hybridanthropic.New(env.Off, env.Reh, nil)
	ctx := context.Background()
	msgs, _ := budgetHistory(t, h, 1)
	notice, err := env.Offload(ctx, adapttest.Body())
	if err != nil {
		t.Fatal(err)
	}
	more := "\nWhat the tool found after it:\n" + strings.Repeat("a finding kept nowhere else\n", 100)
	two := sdk.ToolResultBlockParam{ToolUseID: "toolu_two", Content: []sdk.ToolResultBlockParamContentUnion{
		{OfText: &sdk.TextBlockParam{Text: notice}}, {OfText: &sdk.TextBlockParam{Text: more}}}}
	msgs = append(msgs, sdk.NewAssistantMessage(sdk.NewToolUseBlock("toolu_two", map[string]any{}, "fetch")),
		sdk.NewUserMessage(sdk.ContentBlockParamUnion{OfToolResult: &two}))
	out, err := h.Compact(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := resultOf(t, out[4].OfUser.Content[0])
	st, ok := hybridctx.ParseStoredText(got)
	if !ok || !st.Masked {
		t.Fatalf("not masked: %q", got)
	}
	back, err := env.Reh.Rehydrate(ctx, hybridctx.Request{Reference: st.Ref.String(), Budget: 1 << 20})
	if err != nil || string(back.Segment.Bytes()) != notice+more {
		t.Fatalf("the mask of [notice, more text] does not read back both blocks (%v)", err)
	}
}

// TestCompactResultBeforeToolUse: a tool_result placed before its
// tool_use is refused, and the messages come back unchanged.
func TestCompactResultBeforeToolUse(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: adapttest.Threshold, History: hybridctx.HistoryPolicy{Budget: 100}})
	h, _ := hybridanthropic.New(env.Off, env.Reh, nil)
	msgs, _ := budgetHistory(t, h, 3)
	swapped := append([]sdk.MessageParam{msgs[0], msgs[2], msgs[1]}, msgs[3:]...)
	out, err := h.Compact(context.Background(), swapped)
	if !errors.Is(err, hybridctx.ErrInvalidHistory) || mustJSON(t, out) != mustJSON(t, swapped) {
		t.Fatalf("tool_result before its tool_use: %v", err)
	}
}

// TestCompactInputs: with MaskInputs the content of a write-file tool_use
// is masked once its tool_result is there, whether the input is the
// json.RawMessage of a model reply (Message.ToParam) or a map the host
// built: the input keeps its type, the SDK sends valid JSON of the same
// shape, the mask reads back the content byte-exact through the read tool,
// msgs is not modified, and compacting again changes nothing.
func TestCompactInputs(t *testing.T) {
	env := adapttest.New(t, adapttest.InputsPolicy())
	sum := sink.NewSummary()
	h, err := hybridanthropic.New(env.Off, env.Reh, &hybridanthropic.Options{Compaction: sum})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	content := adapttest.FileContent()
	args := adapttest.WriteFileArgs(content)
	var reply sdk.Message
	if err := json.Unmarshal([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","stop_reason":"tool_use",`+
		`"content":[{"type":"text","text":"Writing it."},{"type":"tool_use","id":"toolu_w1","name":"`+adapttest.WriteTool+`","input":`+args+`}],`+
		`"usage":{"input_tokens":1,"output_tokens":1}}`), &reply); err != nil {
		t.Fatal(err)
	}
	var asMap map[string]any
	if err := json.Unmarshal([]byte(args), &asMap); err != nil {
		t.Fatal(err)
	}
	msgs := []sdk.MessageParam{
		sdk.NewUserMessage(sdk.NewTextBlock("Write the notes.")),
		reply.ToParam(),
		sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_w1", "written", false)),
		sdk.NewAssistantMessage(sdk.NewToolUseBlock("toolu_w2", asMap, adapttest.WriteTool)),
		sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_w2", "written", false)),
	}
	if _, ok := msgs[1].OfAssistant.Content[1].OfToolUse.Input.(json.RawMessage); !ok {
		t.Fatalf("the reply's input is %T", msgs[1].OfAssistant.Content[1].OfToolUse.Input)
	}
	before := mustJSON(t, msgs)
	out, err := h.Compact(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if mustJSON(t, msgs) != before {
		t.Fatal("Compact modified its input")
	}
	// Through the SDK's own encoding.
	raw, err := json.Marshal(sdk.MessageNewParams{Model: "m", MaxTokens: 1, Messages: out})
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Messages []struct {
			Content []struct {
				Type  string          `json:"type"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatal(err)
	}
	for _, at := range [][2]int{{1, 1}, {3, 0}} {
		b := wire.Messages[at[0]].Content[at[1]]
		if b.Type != "tool_use" {
			t.Fatalf("block %v is %s", at, b.Type)
		}
		if err := env.CheckMaskedArgs(ctx, []byte(args), b.Input, content); err != nil {
			t.Fatalf("tool_use %v: %v", at, err)
		}
		var in struct{ Content string }
		_ = json.Unmarshal(b.Input, &in)
		st, _ := hybridctx.ParseStoredText(in.Content)
		rargs, _ := json.Marshal(map[string]any{"reference": st.Ref.String(), "offset": 0, "length": st.Size, "max_bytes": st.Size})
		back := h.Handle(ctx, sdk.ToolUseBlock{ID: "r", Name: hybridctx.DefaultReadToolName, Input: rargs}, nil)
		if got, isErr := resultOf(t, back); isErr || got != content {
			t.Fatalf("tool_use %v: the read tool gave back %d bytes (error %v), want %d", at, len(got), isErr, len(content))
		}
	}
	if _, ok := out[1].OfAssistant.Content[1].OfToolUse.Input.(json.RawMessage); !ok {
		t.Fatalf("the reply's input came back as %T", out[1].OfAssistant.Content[1].OfToolUse.Input)
	}
	if _, ok := out[3].OfAssistant.Content[0].OfToolUse.Input.(map[string]any); !ok {
		t.Fatalf("the map input came back as %T", out[3].OfAssistant.Content[0].OfToolUse.Input)
	}
	if mustJSON(t, out[0]) != mustJSON(t, msgs[0]) || mustJSON(t, out[2]) != mustJSON(t, msgs[2]) {
		t.Fatal("a message without a masked input changed")
	}
	if r := sum.Report().History; r.InputsMasked != 2 {
		t.Fatalf("run summary %+v", r)
	}
	again, err := h.Compact(ctx, out)
	if err != nil || mustJSON(t, again) != mustJSON(t, out) {
		t.Fatalf("compacting again changed the history (%v)", err)
	}
}
