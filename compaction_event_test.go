package hybridctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

// TestCompactionEventOnePerStep: a step reports exactly one
// history_compaction event, after the decisions of its masks, carrying
// the Compaction's own snapshot; a call under the budget that masked no
// input reports nothing; without a reporter the step is the same.
func TestCompactionEventOnePerStep(t *testing.T) {
	e := newEnv(t, 4096)
	c := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 10000, LowWater: 5000, KeepRecent: 1}))
	calls, rs := inlineHistory(11, 1000)
	if got, err := c.Compact(e.ctx, calls[:10], rs[:10]); err != nil || got.Step != nil || len(e.events.all()) != 0 {
		t.Fatalf("at the budget: %+v %v, %d events", got, err, len(e.events.all()))
	}
	got, err := c.Compact(e.ctx, calls, rs)
	if err != nil || !got.Stepped || got.Masked == 0 {
		t.Fatalf("%+v %v", got, err)
	}
	evs := e.events.all()
	if len(evs) != got.Masked+1 {
		t.Fatalf("%d events for %d masks and one step", len(evs), got.Masked)
	}
	last := evs[len(evs)-1]
	if last.Type != hybridctx.HistoryCompaction || last.Compaction != got.Step || last.Diagnostics != nil ||
		last.Sequence != uint64(len(evs)) || last.RunID != "run-1" || last.AgentID != "root" {
		t.Fatalf("the step's event: %v", last)
	}
	s := got.Step
	if !s.Stepped() || s.ResultsMasked() != int64(got.Masked) || s.InputsMasked() != 0 || s.Failed() != 0 ||
		s.Before() != got.Before || s.After() != got.After || !s.InvalidatesCachedPrefix() || s.OverBudget() || s.Shortfall() != 0 {
		t.Fatalf("snapshot %v of %+v", s, got)
	}
	if back := s.Compaction(); back.Masked != got.Masked || back.Before != got.Before || back.After != got.After || !back.Stepped {
		t.Fatalf("Compaction() %+v", back)
	}
	j, _ := json.Marshal(last)
	want := fmt.Sprintf(`"compaction":{"stepped":true,"results_masked":%d,"inputs_masked":0,"failed":0,"before":{"bytes":11000,"tokens":2750},"after":{"bytes":%d,"tokens":%d},"invalidates_cached_prefix":true,"over_budget":false,"shortfall":null}}`,
		got.Masked, got.After.Bytes, got.After.Tokens)
	if !strings.HasSuffix(string(j), want) || strings.Contains(string(j), `"diagnostics"`) {
		t.Fatalf("JSON %s\nwant suffix %s", j, want)
	}
	if p, err := hybridctx.ParseEvent(j); err != nil || p.Compaction.ResultsMasked() != int64(got.Masked) {
		t.Fatalf("parse back: %v %v", p, err)
	}

	// No reporter: the same step, no event anywhere.
	e2 := newEnv(t, 4096)
	c2 := compactor(t, historyOff(t, e2, 4096, hybridctx.HistoryPolicy{Budget: 10000, LowWater: 5000, KeepRecent: 1}))
	quiet, err := c2.Compact(context.Background(), calls, rs)
	if err != nil || quiet.Step == nil || quiet.Masked != got.Masked || len(e2.events.all()) != 0 {
		t.Fatalf("without a reporter: %+v %v", quiet, err)
	}
}

// TestCompactionEventOverBudget: a step that cannot reach the budget says
// so, with its shortfall, and an observer sees the same step once.
func TestCompactionEventOverBudget(t *testing.T) {
	e := newEnv(t, 4096)
	obs := &recorder{}
	c, err := hybridctx.NewCompactor(historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 1500, KeepRecent: 2}), &hybridctx.CompactorOptions{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	calls, rs := inlineHistory(3, 1000)
	got, err := c.Compact(e.ctx, calls, rs)
	if err != nil || !got.OverBudget {
		t.Fatalf("%+v %v", got, err)
	}
	cs := e.events.compactions()
	if len(cs) != 1 || len(obs.steps) != 1 || obs.steps[0] != got {
		t.Fatalf("%d events, %d observed", len(cs), len(obs.steps))
	}
	s := cs[0].Compaction
	if !s.OverBudget() || s.Shortfall() != hybridctx.ShortKeepRecent || s.Shortfall() != got.Shortfall {
		t.Fatalf("over budget: %v", s)
	}
	if j, _ := json.Marshal(s); !strings.Contains(string(j), `"over_budget":true,"shortfall":"keep_recent"`) {
		t.Fatalf("JSON %s", j)
	}
}

// TestCompactionEventPrivacy: nothing of the history (content, tool
// names, call ids, inputs) reaches the compaction event in any rendering.
func TestCompactionEventPrivacy(t *testing.T) {
	e := newEnv(t, 4096)
	c := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 10, KeepRecent: -1, MaskInputs: true}))
	secret := "MARKER-CONTENT " + strings.Repeat("z", 400)
	input := `{"path": "MARKER-PATH", "content": "MARKER-CONTENT ` + strings.Repeat("q", 5000) + `"}`
	rs := []hybridctx.HistoryResult{{Call: hybridctx.Call{Tool: "MARKER-TOOL", ID: "MARKER-CALL"}, Text: secret,
		Form: hybridctx.FormInline, Input: input}}
	got, err := c.Compact(e.ctx, []string{"MARKER-CALL"}, rs)
	if err != nil || got.Masked != 1 || got.InputsMasked != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	cs := e.events.compactions()
	if len(cs) != 1 {
		t.Fatalf("%d compaction events", len(cs))
	}
	ev := cs[0]
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("step", "event", ev, "compaction", ev.Compaction)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("step", "event", ev, "compaction", ev.Compaction)
	je, _ := json.Marshal(ev)
	s := ev.Compaction
	outputs := []string{s.String(), fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s), ev.String(),
		fmt.Sprintf("%v %+v %#v", ev, ev, ev), fmt.Sprintf("%+v", *ev), string(je), buf.String()}
	outputs = append(outputs, walk(reflect.ValueOf(ev))...)
	for _, o := range outputs {
		assertClean(t, o)
	}
	if !strings.Contains(ev.String(), "history_compaction") || !strings.Contains(buf.String(), "results_masked") {
		t.Fatalf("renderings lack the step: %s / %s", ev.String(), buf.String())
	}
}
