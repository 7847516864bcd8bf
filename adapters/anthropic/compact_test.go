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
