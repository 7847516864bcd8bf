package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/agent/internal/agenttest"
	"github.com/hybridctx/hybridctx/agent/loop"
	"github.com/hybridctx/hybridctx/sink"
)

// budgetEnv is agenttest's Env under a policy with a history budget.
func budgetEnv(t *testing.T, p hybridctx.Policy) *agenttest.Env {
	t.Helper()
	e := agenttest.NewEnv(t, p.InlineThreshold, 1<<20)
	var err error
	if e.Off, err = hybridctx.NewOffloader(e.Bind, p, nil); err != nil {
		t.Fatal(err)
	}
	if e.MW, err = agent.NewMiddleware(e.Off); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestLoopHistoryBudget runs 40 fetches of 1,000-3,000 bytes (inline at a
// 4 KiB threshold) plus one large one (a notice) under a 16 KiB budget;
// the scripted model then reads the oldest masked result back through the
// read tool, by the reference and range its mask gives, and checks the
// bytes.
func TestLoopHistoryBudget(t *testing.T) {
	const turns = 40
	e := budgetEnv(t, hybridctx.Policy{InlineThreshold: 4096, History: hybridctx.HistoryPolicy{Budget: 16384, LowWater: 8192}})
	summary := sink.NewSummary()
	ctx, _ := agenttest.Reporting("root", summary)
	var steps []loop.Step
	sizes := make([]int, turns)
	for i := range turns {
		sizes[i] = 1000 + (i*733)%2000
		if i == 5 {
			sizes[i] = 20000
		}
		steps = append(steps, loop.CallTool("fetch", fetchArgs(sizes[i], uint64(i))))
	}
	var readBack string
	steps = append(steps, func(h []loop.Message) (loop.Reply, error) {
		for _, m := range h {
			if m.Role == loop.RoleTool && m.Masked && m.ToolCallID == "call_1" {
				st, ok := hybridctx.ParseStoredText(m.Content)
				if !ok {
					return loop.Reply{}, errors.New("mask does not parse")
				}
				return loop.Reply{ToolCalls: []loop.ToolCall{{Name: e.Read.Name(), Arguments: agent.ReadArguments(st.Ref.String(), 0, st.Size, 0)}}}, nil
			}
		}
		return loop.Reply{}, errors.New("the first result was never masked")
	}, func(h []loop.Message) (loop.Reply, error) {
		readBack = h[len(h)-1].Content
		return loop.Reply{Content: "done"}, nil
	})
	l, err := loop.NewLoop(loop.Config{Model: loop.NewScriptedModel(steps...), Middleware: e.MW, Tools: []agent.Tool{fetchTool()},
		ReadTool: e.Read, MaxTurns: 100, Compaction: summary})
	if err != nil {
		t.Fatal(err)
	}
	h := newHistory(t, 4096)
	if _, err := l.Run(ctx, h); err != nil {
		t.Fatal(err)
	}
	if readBack != agenttest.Text(sizes[0], 0) {
		t.Fatalf("the masked result read back %d bytes, want its %d", len(readBack), sizes[0])
	}
	if err := h.Verify(); err != nil {
		t.Fatal(err)
	}
	rep := summary.Report()
	if rep.History.Compactions < 2 || rep.History.Masked < 10 || rep.History.OverBudget != 0 ||
		rep.Count(hybridctx.Offloaded, hybridctx.HistoryBudget) == 0 {
		t.Fatalf("history report %+v", rep.History)
	}
	// The notice of the large result shrank without a decision of its own.
	for _, m := range h.Messages() {
		if m.ToolCallID == "call_6" && (!m.Masked || m.Offload.Reason() != hybridctx.ThresholdExceeded || len(m.Content) > hybridctx.MaxMaskLen) {
			t.Fatalf("the large result's notice: masked %v, %v", m.Masked, m.Offload.Reason())
		}
	}
	last := h.LastCompaction()
	if last == nil {
		t.Fatal("no compaction recorded")
	}
}

// TestVerifyOverBudget: when the recent results alone hold more than the
// budget, Verify says the budget could not hold, and why.
func TestVerifyOverBudget(t *testing.T) {
	e := budgetEnv(t, hybridctx.Policy{InlineThreshold: 4096, History: hybridctx.HistoryPolicy{Budget: 2000, KeepRecent: 3}})
	steps := []loop.Step{}
	for i := range 5 {
		steps = append(steps, loop.CallTool("fetch", fetchArgs(3000, uint64(i))))
	}
	steps = append(steps, loop.Say("done"))
	l, err := loop.NewLoop(loop.Config{Model: loop.NewScriptedModel(steps...), Middleware: e.MW, Tools: []agent.Tool{fetchTool()}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHistory(t, 4096)
	if _, err := l.Run(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	var ie *loop.InvariantError
	if err := h.Verify(); !errors.As(err, &ie) || ie.Problem != loop.ProblemOverBudget || ie.Shortfall != hybridctx.ShortKeepRecent {
		t.Fatalf("verify: %v", err)
	}
	if !strings.Contains(ie.Error(), "keep_recent") {
		t.Fatalf("error text %q", ie.Error())
	}
}

// TestLoopBudgetBadHistory: a history whose tool message answers no call is
// refused before the model call and left as it was.
func TestLoopBudgetBadHistory(t *testing.T) {
	e := budgetEnv(t, hybridctx.Policy{InlineThreshold: 4096, History: hybridctx.HistoryPolicy{Budget: 2000}})
	l, err := loop.NewLoop(loop.Config{Model: loop.NewScriptedModel(loop.Say("x")), Middleware: e.MW})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := loop.NewHistory(4096, loop.Message{Role: loop.RoleTool, ToolCallID: "nobody", Content: strings.Repeat("x", 3000)})
	if _, err := l.Run(context.Background(), h); !errors.Is(err, hybridctx.ErrInvalidHistory) || h.At(0).Masked {
		t.Fatalf("%v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Run(ctx, h); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
