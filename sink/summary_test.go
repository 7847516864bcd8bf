package sink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/sink"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// Markers that must never reach a sink's output.
const (
	markUser    = "USER-7f3a"
	markSession = "SESSION-91c2"
	markTool    = "TOOL-55d0"
	markCall    = "CALL-0b8e"
	markContent = "CONTENT-e4d1"
)

// workload makes one decision of every common kind, plus a sub-agent's, and
// returns the events it reported.
func workload(t *testing.T, sinks ...hybridctx.Sink) []*hybridctx.Event {
	t.Helper()
	ctx := context.Background()
	mem := memstore.New()
	store := workspace.New(mem, mem)
	owner := artifact.Owner{User: markUser, Workflow: "wf", Session: markSession}
	bind, _ := hybridctx.NewBinding(owner, store)
	other, _ := hybridctx.NewBinding(artifact.Owner{User: "u2", Workflow: "wf", Session: "s2"}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 100}, nil)
	otherOff, _ := hybridctx.NewOffloader(other, hybridctx.Policy{InlineThreshold: 100}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	var mu sync.Mutex
	var events []*hybridctx.Event
	keep := hybridctx.SinkFunc(func(_ context.Context, e *hybridctx.Event) error {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
		return nil
	})
	root := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "r", AgentID: "root", Sinks: append(sinks, keep)})
	rctx := hybridctx.WithReporter(ctx, root)
	cctx := hybridctx.WithReporter(ctx, root.Child("child"))
	call := hybridctx.Call{Tool: markTool, ID: markCall}
	big := strings.Repeat(markContent+"\n", 200)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(off.Offload(rctx, call, markContent))              // inline
	must(off.Offload(rctx, call, strings.Repeat("i", 100))) // inline, at the threshold
	stored, _ := off.Offload(rctx, call, big)               // offloaded
	must(off.Offload(cctx, call, big))                      // existing_reference
	theirs, _ := otherOff.Offload(ctx, call, big+"x")       // another owner's, no reporter
	must(reh.Rehydrate(rctx, hybridctx.Request{Reference: stored.Ref.String(), Budget: 1 << 20, Length: 500}))
	seg, _ := reh.Rehydrate(cctx, hybridctx.Request{Reference: stored.Ref.String(), Budget: 1 << 20})
	must(off.Offload(cctx, call, seg.Segment))                                               // recovered_segment_bypass
	must(reh.Rehydrate(rctx, hybridctx.Request{Reference: stored.Ref.String(), Budget: 10})) // over_budget
	must(reh.Rehydrate(rctx, hybridctx.Request{Reference: theirs.Ref.String(), Budget: 10})) // unauthorized
	must(reh.Rehydrate(rctx, hybridctx.Request{Reference: markContent, Budget: 10}))         // invalid_reference
	noStore, _ := hybridctx.NewBinding(owner, nil)
	failing, _ := hybridctx.NewOffloader(noStore, hybridctx.Policy{InlineThreshold: 100}, nil)
	must(failing.Offload(cctx, call, big)) // failed
	return events
}

func TestSummaryEqualsEvents(t *testing.T) {
	s := sink.NewSummary()
	events := workload(t, s)
	rep := s.Report()
	if rep.Events != int64(len(events)) || rep.Agents != 2 || rep.MaxDepth != 1 {
		t.Fatalf("report %+v, %d events", rep, len(events))
	}
	// Recount independently from the events.
	counts := map[[2]string]int64{}
	var kept, rehydrated, largest int64
	for _, e := range events {
		d := e.Diagnostics
		counts[[2]string{d.Outcome().String(), d.Reason().String()}]++
		in, out, _ := d.Attribution()
		switch d.Outcome() {
		case hybridctx.Offloaded, hybridctx.ExistingReference:
			kept += in - 82
		case hybridctx.Resolved:
			rehydrated += out
		case hybridctx.Inline:
			if d.Reason() == hybridctx.BelowThreshold {
				largest = max(largest, in)
			}
		}
	}
	var total int64
	for op, byOutcome := range rep.Decisions {
		for oc, byReason := range byOutcome {
			if oc.Operation() != op {
				t.Errorf("%v under %v", oc, op)
			}
			for r, n := range byReason {
				if counts[[2]string{oc.String(), r.String()}] != n {
					t.Errorf("%v/%v: %d, events say %d", oc, r, n, counts[[2]string{oc.String(), r.String()}])
				}
				total += n
			}
		}
	}
	if total != int64(len(events)) || len(counts) != 9 {
		t.Fatalf("%d counted of %d events, %d kinds", total, len(events), len(counts))
	}
	if rep.BytesKeptOutOfContext != kept || rep.BytesRehydrated != rehydrated || rep.LargestInlineBytes != largest || largest != 100 {
		t.Fatalf("bytes: kept %d/%d rehydrated %d/%d largest %d/%d", rep.BytesKeptOutOfContext, kept, rep.BytesRehydrated, rehydrated, rep.LargestInlineBytes, largest)
	}
	if rep.Count(hybridctx.Inline, hybridctx.RecoveredSegmentBypass) != 1 || rep.Outcomes[hybridctx.Inline] != 3 {
		t.Fatalf("counts %v", rep.Outcomes)
	}

	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Events    int64                                  `json:"events"`
		Decisions map[string]map[string]map[string]int64 `json:"decisions"`
		Outcomes  map[string]int64                       `json:"outcomes"`
		Kept      *int64                                 `json:"bytes_kept_out_of_context"`
		Rehyd     *int64                                 `json:"bytes_rehydrated"`
		Largest   *int64                                 `json:"largest_inline_bytes"`
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	if shape.Decisions["rehydration"]["over_budget"]["budget_exceeded"] != 1 || shape.Outcomes["offloaded"] != 1 ||
		shape.Kept == nil || *shape.Rehyd != rehydrated || shape.Largest == nil {
		t.Fatalf("JSON %s", b)
	}
	for _, m := range []string{markUser, markSession, markTool, markCall, markContent} {
		if bytes.Contains(b, []byte(m)) {
			t.Fatalf("summary JSON leaks %s", m)
		}
	}
}

func TestSummaryConcurrent(t *testing.T) {
	var s sink.Summary // the zero value is ready
	const workers, each = 8, 100
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_ = s.Emit(context.Background(), events[0])
			}
		}()
	}
	wg.Wait()
	if r := s.Report(); r.Events != workers*each || r.Outcomes[events[0].Diagnostics.Outcome()] != workers*each {
		t.Fatalf("report %+v", r)
	}
	if err := s.Emit(context.Background(), &hybridctx.Event{}); err != nil || s.Report().Events != workers*each {
		t.Fatal("an event without diagnostics was counted")
	}
}

// events holds one event from a fixed decision, for tests that only feed sinks.
var events = func() []*hybridctx.Event {
	var out []*hybridctx.Event
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 8}, nil)
	r := hybridctx.NewReporter(hybridctx.ReporterOptions{Sinks: []hybridctx.Sink{hybridctx.SinkFunc(func(_ context.Context, e *hybridctx.Event) error {
		out = append(out, e)
		return nil
	})}})
	_, _ = off.Offload(hybridctx.WithReporter(context.Background(), r), hybridctx.Call{}, "0123456789")
	return out
}()

func TestSlogPrivacy(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	events := workload(t, sink.NewSlog(logger, &sink.SlogOptions{Message: "decision"}))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(events) {
		t.Fatalf("%d records for %d events", len(lines), len(events))
	}
	for i, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		ev, _ := rec["event"].(map[string]any)
		if rec["msg"] != "decision" || ev["agent_id"] != events[i].AgentID || ev["type"] != string(events[i].Type) {
			t.Fatalf("record %s", l)
		}
		d, _ := ev["diagnostics"].(map[string]any)
		if d["outcome"] != events[i].Diagnostics.Outcome().String() || d["reason"] != events[i].Diagnostics.Reason().String() {
			t.Fatalf("record %s", l)
		}
	}
	for _, m := range []string{markUser, markSession, markTool, markCall, markContent} {
		if strings.Contains(buf.String(), m) {
			t.Fatalf("log leaks %s", m)
		}
	}
	// Disabled levels cost nothing and log nothing.
	buf.Reset()
	quiet := sink.NewSlog(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})), nil)
	if err := quiet.Emit(context.Background(), events[0]); err != nil || buf.Len() != 0 {
		t.Fatalf("logged below the level: %q", buf.String())
	}
	if sink.NewSlog(nil, nil) == nil {
		t.Fatal("nil logger")
	}
}

func TestSummaryCountsCompactions(t *testing.T) {
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: markUser, Workflow: "wf", Session: markSession}, workspace.New(mem, mem))
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4096,
		History: hybridctx.HistoryPolicy{Budget: 2000, KeepRecent: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sink.NewSummary()
	c, _ := hybridctx.NewCompactor(off, &hybridctx.CompactorOptions{Observer: sum})
	var calls []string
	var rs []hybridctx.HistoryResult
	for i := range 4 {
		id := markCall + string(rune('a'+i))
		calls = append(calls, id)
		rs = append(rs, hybridctx.HistoryResult{Call: hybridctx.Call{Tool: markTool, ID: id},
			Text: strings.Repeat(markContent+string(rune('a'+i)), 100), Form: hybridctx.FormInline})
	}
	got, err := c.Compact(context.Background(), calls, rs)
	if err != nil || !got.Stepped {
		t.Fatal(err)
	}
	sum.ObserveCompaction(nil)
	sum.ObserveCompaction(&hybridctx.Compaction{}) // no step: not counted
	h := sum.Report().History
	if h.Compactions != 1 || h.Masked != int64(got.Masked) || h.BytesTakenOut != got.Before.Bytes-got.After.Bytes ||
		h.TokensTakenOut != got.Before.Tokens-got.After.Tokens || h.OverBudget != 0 || h.BytesTakenOut <= 0 {
		t.Fatalf("history report %+v for %+v", h, got)
	}
	b, _ := json.Marshal(sum.Report())
	for _, m := range []string{markUser, markSession, markTool, markCall, markContent} {
		if strings.Contains(string(b), m) {
			t.Fatalf("summary carries %s: %s", m, b)
		}
	}
	if !strings.Contains(string(b), `"history":{"compactions":1,`) {
		t.Fatalf("summary JSON %s", b)
	}
}
