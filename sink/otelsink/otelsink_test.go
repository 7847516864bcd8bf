package otelsink_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/sink"
	"github.com/hybridctx/hybridctx/sink/otelsink"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

var markers = []string{"USER-7f3a", "SESSION-91c2", "TOOL-55d0", "CALL-0b8e", "CONTENT-e4d1"}

// workload makes decisions of most kinds, in a root agent and a child, and
// returns the events.
func workload(t *testing.T, s hybridctx.Sink) []*hybridctx.Event {
	t.Helper()
	ctx := context.Background()
	mem := memstore.New()
	store := workspace.New(mem, mem)
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: markers[0], Workflow: "wf", Session: markers[1]}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 100}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	var events []*hybridctx.Event
	keep := hybridctx.SinkFunc(func(_ context.Context, e *hybridctx.Event) error { events = append(events, e); return nil })
	root := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "r", AgentID: "root", Sinks: []hybridctx.Sink{s, sink.NewSummary(), keep}})
	rctx := hybridctx.WithReporter(ctx, root)
	cctx := hybridctx.WithReporter(ctx, root.Child("child"))
	call := hybridctx.Call{Tool: markers[2], ID: markers[3]}
	for i := range 20 {
		body := strings.Repeat(markers[4], 1+i*i) // 12 .. 4,332 bytes
		out, err := off.Offload(rctx, call, body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := off.Offload(cctx, call, body); err != nil { // the same again: existing
			t.Fatal(err)
		}
		if out.Ref.IsZero() {
			continue
		}
		for _, budget := range []int64{50, 1 << 20} {
			r, err := reh.Rehydrate(cctx, hybridctx.Request{Reference: out.Ref.String(), Budget: budget, Offset: int64(i)})
			if err != nil {
				t.Fatal(err)
			}
			if r.Segment != nil {
				if _, err := off.Offload(rctx, call, r.Segment); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	_, _ = reh.Rehydrate(rctx, hybridctx.Request{Reference: markers[4], Budget: 10})
	_, _ = reh.Rehydrate(rctx, hybridctx.Request{Reference: artifact.RefOf([]byte(markers[4])).String(), Budget: 10})
	return events
}

// key renders a data point's attributes as "operation/outcome/reason/content".
func key(t *testing.T, set attribute.Set) string {
	t.Helper()
	if set.Len() != 4 {
		t.Fatalf("attributes %v, want exactly 4", set.ToSlice())
	}
	var parts []string
	for _, k := range []attribute.Key{otelsink.KeyOperation, otelsink.KeyOutcome, otelsink.KeyReason, otelsink.KeyContent} {
		v, ok := set.Value(k)
		if !ok {
			t.Fatalf("attribute %s missing", k)
		}
		parts = append(parts, v.AsString())
	}
	return strings.Join(parts, "/")
}

func eventKey(d *hybridctx.Diagnostics) string {
	return fmt.Sprintf("%v/%v/%v/%v", d.Operation(), d.Outcome(), d.Reason(), d.Content())
}

func TestMetricsEqualEvents(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	s, err := otelsink.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	events := workload(t, s)

	// What the events say, per attribute set.
	decisions, observedCount, observedSum, kept, rehydrated := map[string]int64{}, map[string]uint64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, e := range events {
		d := e.Diagnostics
		k := eventKey(d)
		decisions[k]++
		if n, ok := d.ObservedBytes(); ok {
			observedCount[k]++
			observedSum[k] += n
		}
		if n := sink.KeptOutOfContext(d); n > 0 {
			kept[k] += n
		}
		if _, out, ok := d.Attribution(); ok && d.Outcome() == hybridctx.Resolved {
			rehydrated[k] += out
		}
	}
	if len(decisions) < 7 {
		t.Fatalf("workload too narrow: %v", decisions)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) != 1 || rm.ScopeMetrics[0].Scope.Name != otelsink.ScopeName {
		t.Fatalf("scopes %+v", rm.ScopeMetrics)
	}
	seen := map[string]bool{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		seen[m.Name] = true
		switch m.Name {
		case otelsink.MetricDecisions, otelsink.MetricKeptBytes, otelsink.MetricRehydrated:
			var want map[string]int64
			switch m.Name {
			case otelsink.MetricDecisions:
				want = decisions
			case otelsink.MetricKeptBytes:
				want = kept
			case otelsink.MetricRehydrated:
				want = rehydrated
			}
			sum := m.Data.(metricdata.Sum[int64])
			if !sum.IsMonotonic || len(sum.DataPoints) != len(want) {
				t.Fatalf("%s: %d points, want %d", m.Name, len(sum.DataPoints), len(want))
			}
			for _, p := range sum.DataPoints {
				if k := key(t, p.Attributes); p.Value != want[k] {
					t.Errorf("%s %s = %d, events say %d", m.Name, k, p.Value, want[k])
				}
			}
		case otelsink.MetricObservedBytes:
			h := m.Data.(metricdata.Histogram[int64])
			if len(h.DataPoints) != len(observedCount) || m.Unit != "By" {
				t.Fatalf("histogram: %d points, want %d", len(h.DataPoints), len(observedCount))
			}
			for _, p := range h.DataPoints {
				k := key(t, p.Attributes)
				if p.Count != observedCount[k] || p.Sum != observedSum[k] || len(p.Bounds) != len(otelsink.BucketBoundaries) {
					t.Errorf("histogram %s: count %d sum %d, events say %d and %d", k, p.Count, p.Sum, observedCount[k], observedSum[k])
				}
			}
		default:
			t.Errorf("unexpected metric %s", m.Name)
		}
	}
	if len(seen) != 4 {
		t.Fatalf("metrics %v", seen)
	}
	// Privacy: nothing but the four categorical attributes, ever.
	text := fmt.Sprintf("%+v", rm)
	for _, m := range append(markers, "root", "child", "artifact://") {
		if strings.Contains(text, m) {
			t.Fatalf("metrics carry %q", m)
		}
	}
}

func TestNew(t *testing.T) {
	if _, err := otelsink.New(nil); !errors.Is(err, otelsink.ErrNilMeterProvider) {
		t.Fatal(err)
	}
	s, err := otelsink.New(noop.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Emit(context.Background(), &hybridctx.Event{}); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkEmit(b *testing.B) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	s, _ := otelsink.New(mp)
	var events []*hybridctx.Event
	keep := hybridctx.SinkFunc(func(_ context.Context, e *hybridctx.Event) error { events = append(events, e); return nil })
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 8}, nil)
	ctx := hybridctx.WithReporter(context.Background(), hybridctx.NewReporter(hybridctx.ReporterOptions{Sinks: []hybridctx.Sink{keep}}))
	_, _ = off.Offload(ctx, hybridctx.Call{}, "0123456789abcdef")
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Emit(context.Background(), events[0])
	}
}
