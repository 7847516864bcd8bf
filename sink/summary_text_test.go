package sink_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/sink"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// TestSummaryCountsCompactionEvents: a Summary that is a sink of the
// compactor's reporter counts each step from its history_compaction event,
// once, and not among the decisions.
func TestSummaryCountsCompactionEvents(t *testing.T) {
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "wf", Session: "s"}, workspace.New(mem, mem))
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4096,
		History: hybridctx.HistoryPolicy{Budget: 2000, KeepRecent: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sink.NewSummary()
	ctx := hybridctx.WithReporter(context.Background(), hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "r", AgentID: "a", Sinks: []hybridctx.Sink{sum}}))
	c, _ := hybridctx.NewCompactor(off, nil)
	var calls []string
	var rs []hybridctx.HistoryResult
	for i := range 4 {
		id := string(rune('a' + i))
		calls = append(calls, id)
		rs = append(rs, hybridctx.HistoryResult{Call: hybridctx.Call{Tool: "t", ID: id},
			Text: strings.Repeat("result "+id, 100), Form: hybridctx.FormInline})
	}
	got, err := c.Compact(ctx, calls, rs)
	if err != nil || !got.Stepped || got.Masked == 0 {
		t.Fatalf("%+v %v", got, err)
	}
	rep := sum.Report()
	h := rep.History
	if h.Compactions != 1 || h.Masked != int64(got.Masked) || h.BytesTakenOut != got.Before.Bytes-got.After.Bytes ||
		h.TokensTakenOut != got.Before.Tokens-got.After.Tokens || h.OverBudget != 0 {
		t.Fatalf("history report %+v for %+v", h, got)
	}
	if rep.Events != int64(got.Masked) || rep.Count(hybridctx.Offloaded, hybridctx.HistoryBudget) != int64(got.Masked) {
		t.Fatalf("decisions %+v: the step's event is no decision", rep)
	}
}

// TestWriteText pins the summary lines the command line prints (the demo's
// tests pin them too) and the page shows.
func TestWriteText(t *testing.T) {
	rep := sink.SummaryReport{
		Outcomes: map[hybridctx.Outcome]int64{hybridctx.Offloaded: 3, hybridctx.Inline: 2, hybridctx.Resolved: 1,
			hybridctx.OverBudget: 1},
		BytesKeptOutOfContext: 1234567, BytesRehydrated: 977, LargestInlineBytes: 100,
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "offload      inline 2, offloaded 3\n" +
		"rehydration  resolved 1, over_budget 1\n" +
		"bytes        1,234,567 kept out of context, 977 rehydrated, largest inline result 100\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	for n, line := range map[int64]string{1: "compaction   1 step masked 4 tool results to references, 12,000 bytes out of the history (nothing lost)\n",
		2: "compaction   2 steps masked 4 tool results to references, 12,000 bytes out of the history (nothing lost)\n"} {
		rep.History = sink.HistoryReport{Compactions: n, Masked: 4, BytesTakenOut: 12000}
		b.Reset()
		_ = rep.WriteText(&b)
		if !strings.HasSuffix(b.String(), line) || !strings.HasPrefix(b.String(), want) {
			t.Fatalf("%d steps:\n%s", n, b.String())
		}
	}
	if err := rep.WriteText(failWriter{}); err == nil || err.Error() != "disk full" {
		t.Fatalf("a failing writer: %v", err)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1000: "-1,000",
		-999: "-999", 100000: "100,000"} {
		if got := sink.Thousands(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}
