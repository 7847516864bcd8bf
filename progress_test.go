package hybridctx_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hybridctx/hybridctx"
)

func TestOneEventPerDecision(t *testing.T) {
	e := newEnv(t, 8)
	var outs []*hybridctx.Diagnostics
	add := func(d *hybridctx.Diagnostics) { outs = append(outs, d) }
	add(mustOffload(t, e.off, e.ctx, "small").Diagnostics())
	big := mustOffload(t, e.off, e.ctx, "a result over eight bytes")
	add(big.Diagnostics())
	add(mustOffload(t, e.off, e.ctx, "a result over eight bytes").Diagnostics())
	add(mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: big.Ref.String(), Budget: 100}).Diagnostics())
	add(mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: big.Ref.String(), Budget: 1}).Diagnostics())
	add(mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: "nope", Budget: 1}).Diagnostics())
	nob, _ := hybridctx.NewOffloader(nil, hybridctx.Policy{InlineThreshold: 8}, nil)
	add(mustOffload(t, nob, e.ctx, "a result over eight bytes").Diagnostics())

	evs := e.events.all()
	if len(evs) != len(outs) {
		t.Fatalf("%d events for %d decisions", len(evs), len(outs))
	}
	for i, ev := range evs {
		if ev.Sequence != uint64(i+1) {
			t.Errorf("event %d has sequence %d", i, ev.Sequence)
		}
		if ev.Diagnostics != outs[i] {
			t.Errorf("event %d does not carry the outcome's diagnostics instance", i)
		}
		wantType := hybridctx.OffloadDecision
		if ev.Diagnostics.Operation() == hybridctx.OpRehydration {
			wantType = hybridctx.RehydrationDecision
		}
		if ev.Type != wantType || ev.RunID != "run-1" || ev.AgentID != "root" || ev.Depth != 0 || ev.ParentAgentID != nil {
			t.Errorf("event %d: %v", i, ev)
		}
		if ev.Time.Location().String() != "UTC" || ev.Time.IsZero() {
			t.Errorf("event %d time %v", i, ev.Time)
		}
	}
	if evs[1].Diagnostics.Reference() != big.Ref || evs[3].Diagnostics.Reference() != big.Ref {
		t.Fatal("reference identity lost")
	}
}

func TestDiagnosticsPerOutcome(t *testing.T) {
	e := newEnv(t, 8)
	type want struct {
		content  hybridctx.Content
		observed int64 // -1 null
		in, out  int64 // out -1 null
		hasRef   bool
	}
	check := func(name string, d *hybridctx.Diagnostics, w want) {
		t.Helper()
		n, ok := d.ObservedBytes()
		if (w.observed < 0) == ok || (ok && n != w.observed) {
			t.Errorf("%s: observed %d %v, want %d", name, n, ok, w.observed)
		}
		in, out, ok := d.Attribution()
		if in != w.in || (w.out < 0) == ok || (ok && out != w.out) {
			t.Errorf("%s: attribution %d/%d/%v, want %d/%d", name, in, out, ok, w.in, w.out)
		}
		if d.Content() != w.content || d.Reference().IsZero() == w.hasRef {
			t.Errorf("%s: content %v ref %v", name, d.Content(), d.Reference())
		}
	}
	body := "twenty-four bytes of it!"
	check("inline", mustOffload(t, e.off, e.ctx, "1234567").Diagnostics(), want{hybridctx.ToolResult, 7, 7, 7, false})
	off := mustOffload(t, e.off, e.ctx, body)
	check("offloaded", off.Diagnostics(), want{hybridctx.ToolResult, 24, 24, 82, true})
	check("existing", mustOffload(t, e.off, e.ctx, body).Diagnostics(), want{hybridctx.ToolResult, 24, 24, 82, true})
	nob, _ := hybridctx.NewOffloader(nil, hybridctx.Policy{InlineThreshold: 8}, nil)
	check("failed", mustOffload(t, nob, e.ctx, body).Diagnostics(), want{hybridctx.ToolResult, 24, 24, -1, false})
	ref := off.Ref.String()
	check("resolved", mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref, Budget: 50, Offset: 4}).Diagnostics(), want{hybridctx.RecoveredContext, 20, 82, 20, true})
	check("over_budget", mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: ref, Budget: 5}).Diagnostics(), want{hybridctx.RecoveredContext, 24, 82, -1, true})
	offB := e.offloader(t, e.binding(t, ownerB), 8)
	other := mustOffload(t, offB, e.ctx, "someone else's twenty bytes").Ref.String()
	check("unauthorized", mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: other, Budget: 5}).Diagnostics(), want{hybridctx.RecoveredContext, -1, 82, -1, true})
	check("invalid", mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: "abc", Budget: 5}).Diagnostics(), want{hybridctx.RecoveredContext, -1, 3, -1, false})
}

func TestChildReporters(t *testing.T) {
	e := newEnv(t, 4)
	root := hybridctx.ReporterFrom(e.ctx)
	child := root.Child("child-agent")
	nested := child.Child("nested-child-agent")
	cctx := hybridctx.WithReporter(context.Background(), child)
	nctx := hybridctx.WithReporter(context.Background(), nested)

	ref := mustOffload(t, e.off, cctx, "offloaded by the child").Ref.String()
	mustRehydrate(t, e.reh, cctx, hybridctx.Request{Reference: ref, Budget: 100})
	mustOffload(t, e.off, nctx, "nested offload")
	mustRehydrate(t, e.reh, nctx, hybridctx.Request{Reference: ref, Budget: 100})
	mustOffload(t, e.off, e.ctx, "root again, over four")

	evs := e.events.all()
	want := []struct {
		agent, parent string
		depth         int
	}{{"child-agent", "root", 1}, {"child-agent", "root", 1}, {"nested-child-agent", "child-agent", 2}, {"nested-child-agent", "child-agent", 2}, {"root", "", 0}}
	if len(evs) != len(want) {
		t.Fatalf("%d events", len(evs))
	}
	for i, w := range want {
		ev := evs[i]
		parent := ""
		if ev.ParentAgentID != nil {
			parent = *ev.ParentAgentID
		}
		if ev.AgentID != w.agent || parent != w.parent || ev.Depth != w.depth || ev.Sequence != uint64(i+1) || ev.RunID != "run-1" {
			t.Errorf("event %d: %v", i, ev)
		}
	}
	if evs[0].Type != hybridctx.OffloadDecision || evs[3].Type != hybridctx.RehydrationDecision {
		t.Fatal("event types")
	}
}

// plainReporter implements Reporter without ParentReporter.
type plainReporter struct {
	seq    uint64
	events []*hybridctx.Event
}

func (p *plainReporter) RunID() string                                { return "plain" }
func (p *plainReporter) AgentID() string                              { return "custom" }
func (p *plainReporter) Depth() int                                   { return 3 }
func (p *plainReporter) NextSequence() uint64                         { p.seq++; return p.seq }
func (p *plainReporter) Report(_ context.Context, e *hybridctx.Event) { p.events = append(p.events, e) }
func (p *plainReporter) Child(string) hybridctx.Reporter              { return p }

func TestReporterWithoutParentInterface(t *testing.T) {
	e := newEnv(t, 4)
	p := &plainReporter{}
	ctx := hybridctx.WithReporter(context.Background(), p)
	mustOffload(t, e.off, ctx, "x")
	if len(p.events) != 1 || p.events[0].ParentAgentID != nil || p.events[0].Depth != 3 || p.events[0].Sequence != 1 {
		t.Fatalf("events %v", p.events)
	}
	b, _ := json.Marshal(p.events[0])
	if !strings.Contains(string(b), `"parent_agent_id":null`) {
		t.Fatalf("json %s", b)
	}
}

func TestNoReporterAndFailingSinks(t *testing.T) {
	var mu sync.Mutex
	var sinkErrs []error
	failing := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "r", Sinks: []hybridctx.Sink{
		hybridctx.SinkFunc(func(context.Context, *hybridctx.Event) error { return errors.New("sink down") }),
		hybridctx.SinkFunc(func(context.Context, *hybridctx.Event) error { panic("sink panicked") }),
	}, OnSinkError: func(err error) { mu.Lock(); sinkErrs = append(sinkErrs, err); mu.Unlock() }})
	panicky := &panicReporter{}
	ctxs := map[string]context.Context{
		"none":    context.Background(),
		"failing": hybridctx.WithReporter(context.Background(), failing),
		"panicky": hybridctx.WithReporter(context.Background(), panicky),
	}
	var first []string
	for name, ctx := range ctxs {
		e := newEnv(t, 8)
		var got []string
		for _, v := range []string{"tiny", "a result over eight bytes"} {
			out, err := e.off.Offload(ctx, hybridctx.Call{}, v)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got = append(got, out.Diagnostics().String(), out.Text())
		}
		if first == nil {
			first = got
		} else if strings.Join(got, "|") != strings.Join(first, "|") {
			t.Fatalf("%s: decisions differ:\n%v\n%v", name, got, first)
		}
		if len(e.events.all()) != 0 {
			t.Fatal("events reached the env's sink through another reporter")
		}
	}
	if len(sinkErrs) != 4 {
		t.Fatalf("sink errors = %d, want 4", len(sinkErrs))
	}
}

type panicReporter struct{ plainReporter }

func (p *panicReporter) Report(context.Context, *hybridctx.Event) { panic("reporter panicked") }

var timeRE = regexp.MustCompile(`"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z"`)

func TestEventJSON(t *testing.T) {
	e := newEnv(t, 4)
	mustOffload(t, e.off, e.ctx, "over four bytes")
	root := hybridctx.ReporterFrom(e.ctx)
	mustOffload(t, e.off, hybridctx.WithReporter(context.Background(), root.Child("kid")), "x")
	evs := e.events.all()
	b, err := json.Marshal(evs[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := []string{"type", "sequence", "time", "run_id", "agent_id", "parent_agent_id", "depth", "diagnostics"}
	if len(m) != len(keys) {
		t.Fatalf("keys %v", m)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Fatalf("missing %s in %s", k, b)
		}
	}
	if !timeRE.Match(b) {
		t.Fatalf("time format: %s", b)
	}
	d := m["diagnostics"].(map[string]any)
	for _, k := range []string{"operation", "outcome", "content", "reason", "observed_bytes", "configured_bytes", "reference", "attribution"} {
		if _, ok := d[k]; !ok {
			t.Fatalf("diagnostics missing %s: %s", k, b)
		}
	}
	if d["outcome"] != "offloaded" || d["reason"] != "threshold_exceeded" || d["content"] != "tool_result" {
		t.Fatalf("diagnostics %v", d)
	}
	b2, _ := json.Marshal(evs[1])
	if !strings.Contains(string(b2), `"parent_agent_id":"root"`) || !strings.Contains(string(b2), `"reference":null`) {
		t.Fatalf("child event %s", b2)
	}
}
