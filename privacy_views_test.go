package hybridctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
)

// TestViewPrivacy extends TestPrivacy to the lines, search and query views
// (docs/rehydration.md, docs/diagnostics.md): for every outcome a view can reach — resolved, paged,
// over_budget, unauthorized, view_failed for each reason — the
// diagnostics and the event carry no marker in any output form, though the
// body, the pattern, the filter and the owner all hold one. (The answer
// itself is content by design: it goes to the model, never into an event.)
func TestViewPrivacy(t *testing.T) {
	ctx := context.Background()
	ds, err := dirstore.Open(ctx, filepath.Join(t.TempDir(), "MARKER-PATH"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	store := workspace.New(ds, ds)
	owner := artifact.Owner{User: "MARKER-USER", Workflow: "MARKER-FLOW", Session: "MARKER-SESSION"}
	bind, _ := hybridctx.NewBinding(owner, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 16}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	col := &collector{}
	rctx := hybridctx.WithReporter(ctx, hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "run", AgentID: "agent", Sinks: []hybridctx.Sink{col}}))
	call := hybridctx.Call{Tool: "MARKER-TOOL", ID: "MARKER-CALL"}
	logText, err := off.Offload(ctx, call, strings.Repeat("MARKER-CONTENT line\n", 50))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := off.Offload(ctx, call, json.RawMessage(`{"MARKER-CONTENT":["MARKER-CONTENT",1,2,3]}`))
	if err != nil {
		t.Fatal(err)
	}
	text, js := logText.Ref.String(), doc.Ref.String()
	foreign := artifact.RefOf([]byte("MARKER-CONTENT never stored")).String()

	var decisions []*hybridctx.Rehydration
	do := func(r *hybridctx.Rehydration, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		decisions = append(decisions, r)
	}
	do(reh.ReadLines(rctx, hybridctx.LinesRequest{Reference: text, Budget: 1000, StartLine: 2, LineCount: 3}))
	do(reh.ReadLines(rctx, hybridctx.LinesRequest{Reference: text, Budget: 5, StartLine: 1}))
	do(reh.Search(rctx, hybridctx.SearchRequest{Reference: text, Budget: 300, Pattern: "MARKER-CONTENT", MaxMatches: 2}))
	do(reh.Search(rctx, hybridctx.SearchRequest{Reference: text, Budget: 4, Pattern: "MARKER-CONTENT"}))
	do(reh.Search(rctx, hybridctx.SearchRequest{Reference: foreign, Budget: 300, Pattern: "MARKER-CONTENT"}))
	do(reh.Query(rctx, hybridctx.QueryRequest{Reference: js, Budget: 300, Filter: `."MARKER-CONTENT"[]`}))
	do(reh.Query(rctx, hybridctx.QueryRequest{Reference: js, Budget: 300, Filter: `."MARKER-CONTENT"."MARKER-FILTER"`}))
	do(reh.Query(rctx, hybridctx.QueryRequest{Reference: text, Budget: 300, Filter: "."}))
	do(reh.Query(rctx, hybridctx.QueryRequest{Reference: js, Budget: 300, Filter: `[range(1e9)] | "MARKER-FILTER"`}))
	wantOutcomes := []hybridctx.Outcome{hybridctx.Resolved, hybridctx.OverBudget, hybridctx.Resolved, hybridctx.OverBudget,
		hybridctx.Unauthorized, hybridctx.Resolved, hybridctx.ViewFailed, hybridctx.ViewFailed, hybridctx.ViewFailed}
	evs := col.all()
	if len(evs) != len(decisions) {
		t.Fatalf("%d events for %d decisions", len(evs), len(decisions))
	}
	var buf bytes.Buffer
	jlog := slog.New(slog.NewJSONHandler(&buf, nil))
	for i, r := range decisions {
		if r.Outcome() != wantOutcomes[i] {
			t.Fatalf("decision %d: %v/%v, want %v", i, r.Outcome(), r.Reason(), wantOutcomes[i])
		}
		d, ev := r.Diagnostics(), evs[i]
		if ev.Diagnostics != d || d.View() == 0 {
			t.Fatalf("decision %d: event not the decision's own diagnostics, or no view", i)
		}
		jd, _ := json.Marshal(d)
		je, _ := json.Marshal(ev)
		jlog.Info("decision", "diagnostics", d, "event", ev)
		outputs := []string{d.String(), fmt.Sprintf("%v %+v %#v", d, d, d), fmt.Sprintf("%v %+v %#v", ev, ev, ev),
			string(jd), string(je), fmt.Sprintf("%+v", r.Page)}
		outputs = append(outputs, walk(reflect.ValueOf(ev))...)
		for _, s := range outputs {
			assertClean(t, s)
			if strings.Contains(s, "MARKER-FILTER") {
				t.Fatalf("the filter leaked in %q", s)
			}
		}
	}
	assertClean(t, buf.String())
}
