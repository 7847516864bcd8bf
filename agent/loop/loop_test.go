package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/agent/internal/agenttest"
	"github.com/hybridctx/hybridctx/agent/loop"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/sink"
)

func newLoop(t testing.TB, e *agenttest.Env, m loop.Model, tools ...agent.Tool) *loop.Loop {
	t.Helper()
	l, err := loop.NewLoop(loop.Config{Model: m, Middleware: e.MW, Tools: tools, ReadTool: e.Read, MaxTurns: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newHistory(t testing.TB, threshold int64) *loop.History {
	t.Helper()
	h, err := loop.NewHistory(threshold,
		loop.Message{Role: loop.RoleSystem, Content: "You are a log analyst."},
		loop.Message{Role: loop.RoleUser, Content: "Why did the build fail?"})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestLoop200Turns plays 200 tool turns with seeded log-normal result sizes
// (median 2 KiB, about a quarter over the 4 KiB threshold) and every tenth
// turn a read of the newest reference, then checks the invariant, the size
// of the history, the event counts, and that every stored body round-trips.
func TestLoop200Turns(t *testing.T) {
	const threshold, turns = 4096, 200
	e := agenttest.NewEnv(t, threshold, 2048)
	summary := sink.NewSummary()
	ctx, rec := agenttest.Reporting("root", summary)
	sizes := logNormalSizes(turns, 2048, 1.1, 42)
	steps := make([]loop.Step, 0, turns+1)
	for i, n := range sizes {
		fetch := loop.CallTool("fetch", fetchArgs(n, uint64(i)))
		if i%10 != 9 {
			steps = append(steps, fetch)
			continue
		}
		read := loop.ReadLatest(e.Read.Name(), int64(i), 1024, 0)
		steps = append(steps, func(h []loop.Message) (loop.Reply, error) {
			if r, err := read(h); err == nil {
				return r, nil
			}
			return fetch(h)
		})
	}
	steps = append(steps, loop.Say("the linker ran out of memory"))
	model := loop.NewScriptedModel(steps...)
	h := newHistory(t, threshold)
	res, err := newLoop(t, e, model, fetchTool()).Run(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if res.Turns != turns+1 || res.Calls != turns || res.Final != "the linker ran out of memory" || model.Remaining() != 0 {
		t.Fatalf("result %+v", res)
	}
	if err := h.Verify(); err != nil {
		t.Fatal(err)
	}

	counts := map[hybridctx.Outcome]int64{}
	var reads, over int
	for _, m := range h.Messages() {
		if m.Role != loop.RoleTool {
			continue
		}
		if m.IsError || m.Offload == nil {
			t.Fatalf("tool message failed: %q", m.Content)
		}
		counts[m.Offload.Outcome()]++
		if m.Offload.Reason() == hybridctx.RecoveredSegmentBypass {
			reads++
		}
		if int64(len(m.Content)) > threshold {
			over++
		}
		if o := m.Offload; o.Outcome() == hybridctx.Offloaded {
			got, err := e.Reh.Rehydrate(context.Background(), hybridctx.Request{Reference: o.Ref.String(), Budget: 1 << 30})
			if err != nil || got.Outcome() != hybridctx.Resolved {
				t.Fatalf("round trip: %v %v", got, err)
			}
			var a struct {
				Size int    `json:"size"`
				Seed uint64 `json:"seed"`
			}
			if err := json.Unmarshal(callArgs(h, m.ToolCallID), &a); err != nil || string(got.Segment.Bytes()) != agenttest.Text(a.Size, a.Seed) {
				t.Fatalf("body of %s differs from its tool result", m.ToolCallID)
			}
		}
	}
	if counts[hybridctx.Offloaded] < 20 || counts[hybridctx.Inline] < 100 || reads < 15 || over != 0 {
		t.Fatalf("workload not as seeded: %v, %d reads, %d over", counts, reads, over)
	}

	rep := summary.Report()
	events := rec.All()
	if rep.Events != int64(len(events)) || rep.Events != int64(turns+reads) {
		t.Fatalf("summary %d events, recorder %d, want %d", rep.Events, len(events), turns+reads)
	}
	if rep.Outcomes[hybridctx.Offloaded] != counts[hybridctx.Offloaded] || rep.Outcomes[hybridctx.Resolved] != int64(reads) ||
		rep.Count(hybridctx.Inline, hybridctx.RecoveredSegmentBypass) != int64(reads) {
		t.Fatalf("summary outcomes %v, history %v", rep.Outcomes, counts)
	}
	size := h.Size()
	if size.Bytes*2 > size.WithoutOffload {
		t.Fatalf("history %d bytes, %d without offload: offload saved too little", size.Bytes, size.WithoutOffload)
	}
	t.Logf("200 turns: history %d bytes with offload, %d without (%.1f%%); %d offloaded, %d inline, %d reads; %d bytes rehydrated, %d kept out of context, largest inline %d",
		size.Bytes, size.WithoutOffload, 100*float64(size.Bytes)/float64(size.WithoutOffload), counts[hybridctx.Offloaded],
		counts[hybridctx.Inline]-int64(reads), reads, rep.BytesRehydrated, rep.BytesKeptOutOfContext, rep.LargestInlineBytes)

	// Forcing a body into the history is detected, at its index.
	big := agenttest.Text(threshold+1, 99)
	h.Append(loop.Message{Role: loop.RoleAssistant, ToolCalls: []loop.ToolCall{{ID: "forced", Name: "fetch"}}},
		loop.Message{Role: loop.RoleTool, ToolCallID: "forced", Content: big})
	var ie *loop.InvariantError
	if err := h.Verify(); !errors.As(err, &ie) || ie.Index != h.Len()-1 || ie.Bytes != threshold+1 {
		t.Fatalf("forced body: %v", err)
	}
}

// callArgs returns the arguments of the call id in h.
func callArgs(h *loop.History, id string) json.RawMessage {
	for _, m := range h.Messages() {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c.Arguments
			}
		}
	}
	return nil
}

func TestLoopToolFailures(t *testing.T) {
	e := agenttest.NewEnv(t, 64, 100)
	failing := agent.Tool{Spec: agent.ToolSpec{Name: "fail"}, Func: func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New(strings.Repeat("e", 500))
	}}
	badJSON := agent.Tool{Spec: agent.ToolSpec{Name: "chan"}, Func: func(context.Context, json.RawMessage) (any, error) {
		return make(chan int), nil
	}}
	brokenReader := agent.Tool{Spec: agent.ToolSpec{Name: "reader"}, Func: func(context.Context, json.RawMessage) (any, error) {
		return iotest.ErrReader(errors.New("pipe closed")), nil
	}}
	model := loop.NewScriptedModel(
		loop.CallTool("fetch", fetchArgs(1000, 1)),
		loop.ReadLatest("read_artifact", 0, 0, 0), // 1000 bytes > cap 100
		loop.CallTool("read_artifact", `{"reference": 7}`),
		loop.CallTool("nope", nil),
		loop.CallTool("fail", nil),
		loop.CallTool("chan", nil),
		loop.CallTool("reader", nil),
		loop.Calls(loop.ToolCall{ID: strings.Repeat("i", artifact.MaxCallFieldLen+1), Name: "fetch", Arguments: fetchArgs(1000, 2)}),
		loop.Say("done"),
	)
	h := newHistory(t, 64)
	if _, err := newLoop(t, e, model, fetchTool(), failing, badJSON, brokenReader).Run(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if err := h.Verify(); err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, m := range h.Messages() {
		if m.Role == loop.RoleTool && m.IsError {
			if len(m.Content) > hybridctx.MaxNoticeLen {
				t.Fatalf("error message of %d bytes", len(m.Content))
			}
			errs = append(errs, m.Content)
		}
	}
	wants := []string{"hybridctx: over_budget (budget_exceeded): the range is 1000", "read_artifact: invalid arguments: ",
		"hybridctx: unknown tool \"nope\"", "tool error: eeee", "hybridctx: the tool's result could not be",
		"tool error: reading the tool's streamed result failed",
		"hybridctx: the tool call was not run: invalid tool call: call id longer than"}
	if len(errs) != len(wants) {
		t.Fatalf("errors %q", errs)
	}
	for i, w := range wants {
		if !strings.HasPrefix(errs[i], w) {
			t.Errorf("error %d = %q, want prefix %q", i, errs[i], w)
		}
	}
}

type failingModel struct{ err error }

func (m failingModel) Next(context.Context, []loop.Message, []agent.ToolSpec) (loop.Reply, error) {
	return loop.Reply{}, m.err
}

func TestLoopStops(t *testing.T) {
	e := agenttest.NewEnv(t, 64, 0)
	boom := errors.New("rate limited")
	if _, err := newLoop(t, e, failingModel{boom}).Run(context.Background(), newHistory(t, 64)); !errors.Is(err, loop.ErrModel) || !errors.Is(err, boom) {
		t.Fatalf("model error: %v", err)
	}
	if _, err := newLoop(t, e, loop.NewScriptedModel()).Run(context.Background(), newHistory(t, 64)); !errors.Is(err, loop.ErrScriptEnded) {
		t.Fatalf("script ended: %v", err)
	}
	again := func(h []loop.Message) (loop.Reply, error) { return loop.CallTool("fetch", fetchArgs(1, 1))(h) }
	l, _ := loop.NewLoop(loop.Config{Model: loop.NewScriptedModel(again, again, again), Middleware: e.MW, Tools: []agent.Tool{fetchTool()}, MaxTurns: 2})
	h := newHistory(t, 64)
	if res, err := l.Run(context.Background(), h); !errors.Is(err, loop.ErrMaxTurns) || res.Turns != 2 || h.Len() != 6 {
		t.Fatalf("max turns: %v %+v, %d messages", err, res, h.Len())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newLoop(t, e, loop.NewScriptedModel(loop.Say("x"))).Run(ctx, newHistory(t, 64)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// A tool that cancels the run mid-call stops it with the context's error.
	ctx, cancel = context.WithCancel(context.Background())
	stop := agent.Tool{Spec: agent.ToolSpec{Name: "stop"}, Func: func(context.Context, json.RawMessage) (any, error) { cancel(); return "x", nil }}
	if _, err := newLoop(t, e, loop.NewScriptedModel(loop.CallTool("stop", nil)), stop).Run(ctx, newHistory(t, 64)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled in a tool: %v", err)
	}
	if _, err := newLoop(t, e, loop.NewScriptedModel()).Run(context.Background(), newHistory(t, 32)); !errors.Is(err, loop.ErrInvalidConfig) {
		t.Fatalf("history threshold below the policy's: %v", err)
	}
}

func TestLoopCallIDs(t *testing.T) {
	e := agenttest.NewEnv(t, 64, 0)
	dup := loop.Calls(loop.ToolCall{ID: "x", Name: "fetch", Arguments: fetchArgs(1, 1)}, loop.ToolCall{ID: "x", Name: "fetch", Arguments: fetchArgs(2, 1)})
	h := newHistory(t, 64)
	if _, err := newLoop(t, e, loop.NewScriptedModel(dup, dup, loop.Say("ok")), fetchTool()).Run(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if err := h.Verify(); err != nil {
		t.Fatalf("duplicate ids were not renamed: %v", err)
	}
}

func TestNewLoopValidates(t *testing.T) {
	e := agenttest.NewEnv(t, 64, 0)
	m := loop.NewScriptedModel()
	for name, cfg := range map[string]loop.Config{
		"no model":      {Middleware: e.MW},
		"no middleware": {Model: m},
		"negative":      {Model: m, Middleware: e.MW, MaxTurns: -1},
		"nameless":      {Model: m, Middleware: e.MW, Tools: []agent.Tool{{Func: fetchTool().Func}}},
		"bodiless":      {Model: m, Middleware: e.MW, Tools: []agent.Tool{{Spec: agent.ToolSpec{Name: "x"}}}},
		"duplicate":     {Model: m, Middleware: e.MW, Tools: []agent.Tool{fetchTool(), fetchTool()}},
		"read twice":    {Model: m, Middleware: e.MW, Tools: []agent.Tool{e.Read.Tool()}, ReadTool: e.Read},
	} {
		if _, err := loop.NewLoop(cfg); !errors.Is(err, loop.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	l, err := loop.NewLoop(loop.Config{Model: m, Middleware: e.MW, Tools: []agent.Tool{fetchTool()}, ReadTool: e.Read})
	if err != nil || len(l.Tools()) != 2 || l.Tools()[1].Name != "read_artifact" {
		t.Fatalf("%v %v", l, err)
	}
	if _, err := l.Run(context.Background(), nil); !errors.Is(err, loop.ErrInvalidConfig) {
		t.Fatal(err)
	}
}
