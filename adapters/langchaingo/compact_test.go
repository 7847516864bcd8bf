package langchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	hybridlc "github.com/hybridctx/hybridctx/adapters/langchaingo"
	"github.com/hybridctx/hybridctx/sink"
)

func pageText(n int) string {
	return fmt.Sprintf("page %03d\n", n) + strings.Repeat(fmt.Sprintf("row %d of page %d\n", n, n), 80)[:991]
}

// history is n turns of LangChainGo messages: an AI message with a tool
// call, then a tool message with its response.
func history(n int) []llms.MessageContent {
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Read every page.")}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: id, Type: "function",
				FunctionCall: &llms.FunctionCall{Name: "page", Arguments: "{}"}}}},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id,
				Name: "page", Content: pageText(i)}}})
	}
	return msgs
}

func TestCompact(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: 4096, History: hybridctx.HistoryPolicy{Budget: 3000, KeepRecent: 2}})
	ctx := context.Background()
	msgs := history(8)
	before, _ := json.Marshal(msgs)
	sum := sink.NewSummary()
	out, err := hybridlc.Compact(ctx, env.Off, msgs, &hybridlc.Options{Compaction: sum})
	if err != nil || sum.Report().History.Compactions != 1 {
		t.Fatalf("%v, run summary %+v", err, sum.Report().History)
	}
	if after, _ := json.Marshal(msgs); string(after) != string(before) || len(out) != len(msgs) {
		t.Fatal("input modified, or messages added or dropped")
	}
	reads, err := hybridlc.NewReadTools(env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	tool, masked := 0, 0
	for i, m := range out {
		if m.Role != msgs[i].Role || len(m.Parts) != len(msgs[i].Parts) {
			t.Fatalf("message %d changed shape", i)
		}
		r, ok := m.Parts[0].(llms.ToolCallResponse)
		if !ok {
			continue
		}
		orig := msgs[i].Parts[0].(llms.ToolCallResponse)
		if r.ToolCallID != orig.ToolCallID || r.Name != orig.Name {
			t.Fatalf("message %d: call id or name changed", i)
		}
		tool += len(r.Content)
		st, ok := hybridctx.ParseStoredText(r.Content)
		if !ok {
			continue
		}
		masked++
		args, _ := json.Marshal(map[string]any{"reference": st.Ref.String(), "offset": 0, "length": st.Size})
		back, err := reads[0].Call(ctx, string(args))
		if err != nil || back != orig.Content {
			t.Fatalf("mask of %s reads back %d bytes: %v", r.ToolCallID, len(back), err)
		}
	}
	if masked == 0 || tool > 3000 {
		t.Fatalf("%d masked, tool content %d", masked, tool)
	}
	again, err := hybridlc.Compact(ctx, env.Off, out, nil)
	if a, b := fmt.Sprint(again), fmt.Sprint(out); err != nil || a != b {
		t.Fatalf("compacting again changed the history: %v", err)
	}
	orphan := append(history(1), llms.MessageContent{Role: llms.ChatMessageTypeTool,
		Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "nobody", Content: strings.Repeat("x", 5000)}}})
	if got, err := hybridlc.Compact(ctx, env.Off, orphan, nil); !errors.Is(err, hybridctx.ErrInvalidHistory) || len(got) != len(orphan) {
		t.Fatalf("orphan: %v", err)
	}
	h := history(2)
	swapped := []llms.MessageContent{h[0], h[2], h[1], h[3], h[4]}
	if _, err := hybridlc.Compact(ctx, env.Off, swapped, nil); !errors.Is(err, hybridctx.ErrInvalidHistory) {
		t.Fatalf("a response before its call: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := hybridlc.Compact(cctx, env.Off, msgs, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	plain := adapttest.New(t, nil)
	if got, err := hybridlc.Compact(ctx, plain.Off, msgs, nil); err != nil || &got[0] != &msgs[0] {
		t.Fatalf("no budget: %v", err)
	}
}

// TestCompactor: one Compactor kept across model calls gives what Compact
// gives, call after call, and steps only when over the budget.
func TestCompactor(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: 4096, History: hybridctx.HistoryPolicy{Budget: 3000, KeepRecent: 2}})
	ctx := context.Background()
	sum := sink.NewSummary()
	c := hybridlc.NewCompactor(env.Off, &hybridlc.Options{Compaction: sum})
	msgs := history(8)
	got, err := c.Compact(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := hybridlc.Compact(ctx, env.Off, msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) || string(g) == func() string { b, _ := json.Marshal(msgs); return string(b) }() {
		t.Fatalf("Compactor and Compact differ, or nothing was masked:\n%.300s\n%.300s", g, w)
	}
	// The compacted history is within the budget: the next call keeps it.
	again, err := c.Compact(ctx, got)
	if a, _ := json.Marshal(again); err != nil || string(a) != string(g) || sum.Report().History.Compactions != 1 {
		t.Fatalf("second call: %v, %d steps", err, sum.Report().History.Compactions)
	}
}

// TestCompactInputs: with MaskInputs the content of an answered
// write-file llms.ToolCall is masked, the arguments still JSON of the same
// shape whose mask reads back the content byte-exact through the read tool;
// the other call of the message, the tool responses and msgs stay, and
// compacting again changes nothing.
func TestCompactInputs(t *testing.T) {
	env := adapttest.New(t, adapttest.InputsPolicy())
	ctx := context.Background()
	content := adapttest.FileContent()
	args := adapttest.WriteFileArgs(content)
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "Write the notes."),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.ToolCall{ID: "w", Type: "function", FunctionCall: &llms.FunctionCall{Name: adapttest.WriteTool, Arguments: args}},
			llms.ToolCall{ID: "s", Type: "function", FunctionCall: &llms.FunctionCall{Name: "stat", Arguments: `{"path":"notes"}`}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "w", Name: adapttest.WriteTool, Content: "written"},
			llms.ToolCallResponse{ToolCallID: "s", Name: "stat", Content: "a directory"}}},
	}
	before, _ := json.Marshal(msgs)
	sum := sink.NewSummary()
	c := hybridlc.NewCompactor(env.Off, &hybridlc.Options{Compaction: sum})
	out, err := c.Compact(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(msgs); string(after) != string(before) {
		t.Fatal("Compact modified its input")
	}
	calls := out[1].Parts
	w, s := calls[0].(llms.ToolCall), calls[1].(llms.ToolCall)
	if w.ID != "w" || s.FunctionCall.Arguments != `{"path":"notes"}` {
		t.Fatalf("tool calls %+v", calls)
	}
	if err := env.CheckMaskedArgs(ctx, []byte(args), []byte(w.FunctionCall.Arguments), content); err != nil {
		t.Fatal(err)
	}
	var in struct{ Content string }
	_ = json.Unmarshal([]byte(w.FunctionCall.Arguments), &in)
	st, _ := hybridctx.ParseStoredText(in.Content)
	reads, err := hybridlc.NewReadTools(env.Reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	rargs, _ := json.Marshal(map[string]any{"reference": st.Ref.String(), "offset": 0, "length": st.Size, "max_bytes": st.Size})
	if back, err := reads[0].Call(ctx, string(rargs)); err != nil || back != content {
		t.Fatalf("the read tool gave back %d bytes (%v), want %d", len(back), err, len(content))
	}
	if a, b := mustJSON(t, out[2]), mustJSON(t, msgs[2]); a != b {
		t.Fatal("a tool response changed")
	}
	if r := sum.Report().History; r.InputsMasked != 1 {
		t.Fatalf("run summary %+v", r)
	}
	again, err := c.Compact(ctx, out)
	if err != nil || mustJSON(t, again) != mustJSON(t, out) || again[1].Parts[0].(llms.ToolCall).FunctionCall.Arguments != w.FunctionCall.Arguments {
		t.Fatalf("compacting again changed the history (%v)", err)
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
