package ui_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/sink"
)

// compact writes to the events file a run whose root agent offloads one
// result, then compacts a history of n results twice over a budget (the
// second step masks nothing more: it keeps the cached prefix), then
// offloads again; it returns the two compactions and the run's summary.
func (r *rig) compact(t *testing.T, runID string, n int) ([]*hybridctx.Compaction, *sink.Summary) {
	t.Helper()
	f, err := os.OpenFile(r.events, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum := sink.NewSummary()
	ctx := hybridctx.WithReporter(context.Background(),
		hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: runID, AgentID: "root", Sinks: []hybridctx.Sink{sink.NewJSONLines(f), sum}}))
	b, err := hybridctx.NewBinding(ownerA, r.store)
	if err != nil {
		t.Fatal(err)
	}
	off, err := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 4096,
		History: hybridctx.HistoryPolicy{Budget: 3000, KeepRecent: 3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := hybridctx.NewCompactor(off, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := off.Offload(ctx, hybridctx.Call{Tool: "t", ID: "first"}, strings.Repeat("a", 5000)); err != nil {
		t.Fatal(err)
	}
	calls := make([]string, n)
	rs := make([]hybridctx.HistoryResult, n)
	for i := range n {
		calls[i] = fmt.Sprint("call-", i)
		rs[i] = hybridctx.HistoryResult{Call: hybridctx.Call{Tool: "t", ID: calls[i]},
			Text: fmt.Sprintf("result %d ", i) + strings.Repeat("r", 1000), Form: hybridctx.FormInline}
	}
	var out []*hybridctx.Compaction
	for range 2 {
		got, err := c.Compact(ctx, calls, rs)
		if err != nil || got.Step == nil {
			t.Fatalf("%+v %v", got, err)
		}
		out = append(out, got)
		for i, m := range got.Results {
			if m.Masked {
				rs[i].Text, rs[i].Form = m.Text, m.Form
			}
		}
	}
	if _, err := off.Offload(ctx, hybridctx.Call{Tool: "t", ID: "last"}, strings.Repeat("z", 5000)); err != nil {
		t.Fatal(err)
	}
	return out, sum
}

type stepJSON struct {
	Seq           uint64
	FirstSeq      uint64 `json:"first_seq"`
	Agent         string
	At            int
	Stepped       bool
	ResultsMasked int64 `json:"results_masked"`
	InputsMasked  int64 `json:"inputs_masked"`
	Before        *hybridctx.HistorySize
	After         *hybridctx.HistorySize
	Invalidates   bool `json:"invalidates_cached_prefix"`
	OverBudget    bool `json:"over_budget"`
	Shortfall     string
}

type runSteps struct {
	Steps     []stepJSON `json:"compaction_steps"`
	StepsFrom string     `json:"compaction_steps_from"`
	Summary   struct {
		Events  int64
		History sink.HistoryReport
	}
	Text    []string `json:"summary_text"`
	Economy struct{ Seq []uint64 }
}

// TestCompactionSteps: the run's steps come from their history_compaction
// events, with sizes, masks, invalidation and budget; each is placed after
// the decisions before it on the chart and in the timeline; the summary
// counts them once and its text is the command line's.
func TestCompactionSteps(t *testing.T) {
	r := newRig(t, "")
	got, sum := r.compact(t, "run-c", 6)
	var run runSteps
	if r.get(t, "GET", "/api/runs/run-c", &run) != 200 {
		t.Fatal("run")
	}
	if run.StepsFrom != "history_compaction" || len(run.Steps) != 2 {
		t.Fatalf("steps from %q: %+v", run.StepsFrom, run.Steps)
	}
	masked := got[0].Masked
	for i, s := range run.Steps {
		c := got[i]
		if s.Agent != "root" || !s.Stepped || s.ResultsMasked != int64(c.Masked) || s.Before == nil || *s.Before != c.Before ||
			*s.After != c.After || s.Invalidates != (c.Masked > 0) || s.OverBudget != c.OverBudget || s.Shortfall != c.Shortfall.String() && c.OverBudget {
			t.Errorf("step %d: %+v for %+v", i, s, c)
		}
		// The chart marks it at the last decision before it.
		if s.At < 0 || s.At >= len(run.Economy.Seq) || run.Economy.Seq[s.At] >= s.Seq ||
			(s.At+1 < len(run.Economy.Seq) && run.Economy.Seq[s.At+1] < s.Seq) {
			t.Errorf("step %d at %d of %v", i, s.At, run.Economy.Seq)
		}
	}
	if masked == 0 || !run.Steps[0].Invalidates || run.Steps[1].Invalidates || run.Steps[1].ResultsMasked != 0 {
		t.Fatalf("the first step masks and invalidates, the second neither: %+v", run.Steps)
	}
	want := sum.Report()
	if run.Summary.History != want.History || want.History.Compactions != 2 || want.History.Masked != int64(masked) ||
		run.Summary.Events != want.Events {
		t.Fatalf("summary history %+v, want %+v", run.Summary.History, want.History)
	}
	var text strings.Builder
	_ = want.WriteText(&text)
	if strings.Join(run.Text, "\n")+"\n" != text.String() || !strings.Contains(text.String(), "compaction   2 steps masked") {
		t.Fatalf("summary text %q, want %q", run.Text, text.String())
	}

	// The timeline: each page carries the steps among its decisions.
	type page struct {
		Total     int
		Decisions []struct{ Seq uint64 }
		Steps     []stepJSON `json:"compaction_steps"`
	}
	var all page
	if r.get(t, "GET", "/api/runs/run-c/decisions", &all) != 200 || len(all.Steps) != 2 || all.Total != masked+2 {
		t.Fatalf("one page: %d steps, %d decisions", len(all.Steps), all.Total)
	}
	var seen []uint64
	for off := 0; off < all.Total; off++ {
		var p page
		if r.get(t, "GET", fmt.Sprintf("/api/runs/run-c/decisions?offset=%d&limit=1", off), &p) != 200 || len(p.Decisions) != 1 {
			t.Fatalf("page %d", off)
		}
		for _, s := range p.Steps {
			if s.Seq > p.Decisions[0].Seq && off+1 < all.Total {
				t.Errorf("page %d holds step %d after its decision %d", off, s.Seq, p.Decisions[0].Seq)
			}
			seen = append(seen, s.Seq)
		}
	}
	if len(seen) != 2 || seen[0] != run.Steps[0].Seq || seen[1] != run.Steps[1].Seq {
		t.Fatalf("paged one decision at a time, the steps seen are %v", seen)
	}
	var filtered page
	if r.get(t, "GET", "/api/runs/run-c/decisions?outcome=offloaded", &filtered) != 200 || len(filtered.Steps) != 0 {
		t.Fatalf("a filtered page carries no steps: %+v", filtered.Steps)
	}
	var beyond page
	if r.get(t, "GET", "/api/runs/run-c/decisions?offset=1000", &beyond) != 200 || len(beyond.Steps) != 0 {
		t.Fatalf("a page beyond the end carries no steps: %+v", beyond.Steps)
	}
}

// TestCompactionStepsFallback: a file without history_compaction events
// (older versions) gets its steps approximated from the history_budget
// decisions, and a forged compaction line is counted and skipped.
func TestCompactionStepsFallback(t *testing.T) {
	r := newRig(t, "")
	r.compact(t, "run-old", 6)
	// Remove the compaction events, as an older version wrote the file,
	// and add forged ones.
	b, err := os.ReadFile(r.events)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	var step string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if strings.Contains(l, `"history_compaction"`) {
			if step == "" {
				step = l
			}
			continue
		}
		kept = append(kept, l)
	}
	forged := []string{
		strings.Replace(step, `"invalidates_cached_prefix":true`, `"invalidates_cached_prefix":false`, 1),
		strings.Replace(step, `"stepped":true`, `"stepped":true,"tool":"secret"`, 1),
		strings.Replace(step, `"results_masked":`, `"results_masked":-`, 1),
		strings.Replace(step, `"history_compaction"`, `"offload_decision"`, 1),
	}
	for _, l := range forged {
		if l == step {
			t.Fatalf("forgery changed nothing: %s", l)
		}
	}
	lines := append(kept, forged...)
	if err := os.WriteFile(r.events, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var runs struct {
		BadLines int64 `json:"bad_lines"`
		Bad      []struct {
			Line   int64
			Reason string
		}
	}
	if r.get(t, "GET", "/api/runs", &runs) != 200 || runs.BadLines != 4 || len(runs.Bad) != 4 ||
		runs.Bad[0].Line != int64(len(kept)+1) || runs.Bad[0].Reason != "not_an_event" {
		t.Fatalf("forged lines: %+v", runs)
	}
	var run runSteps
	if r.get(t, "GET", "/api/runs/run-old", &run) != 200 {
		t.Fatal("run")
	}
	if run.StepsFrom != "history_budget" || len(run.Steps) != 1 {
		t.Fatalf("approximated steps from %q: %+v", run.StepsFrom, run.Steps)
	}
	s := run.Steps[0]
	if s.Before != nil || s.After != nil || s.ResultsMasked == 0 || !s.Invalidates || s.FirstSeq == 0 || s.Seq < s.FirstSeq ||
		run.Economy.Seq[s.At] != s.Seq || run.Summary.History.Compactions != 0 {
		t.Fatalf("approximated step %+v, history %+v", s, run.Summary.History)
	}
	var none runSteps
	r.offload(t, ownerA, "run-plain", strings.Repeat("p", 100))
	if r.get(t, "GET", "/api/runs/run-plain", &none) != 200 || none.StepsFrom != "" || len(none.Steps) != 0 || none.Steps == nil {
		t.Fatalf("a run without steps: %+v", none)
	}
}
