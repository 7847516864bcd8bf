package workload

import (
	"context"
	"testing"
	"time"
)

// TestFloorIsTheHashOfThePercentileDecision: each percentile's floor is the
// hash time of the bytes of the decision at that percentile (not of the
// largest or a typical one), and the ratio is latency over floor.
func TestFloorIsTheHashOfThePercentileDecision(t *testing.T) {
	now := time.Unix(0, 0)
	f := newFloorMeter(func() time.Time { return now })
	hashed := 0
	f.hash = func(b []byte) { now = now.Add(time.Duration(len(b)) * time.Nanosecond); hashed++ } // 1 ns a byte
	var s []sample
	for i := range 100 {
		// The i-th slowest decision took (i+1) ms over (100-i) KB: the
		// slowest are the smallest.
		s = append(s, sample{d: time.Duration(i+1) * time.Millisecond, n: (100 - i) * 1000})
	}
	l := f.latency(s)
	if l.Count != 100 || l.P50 != 50_000 || l.P95 != 95_000 || l.P99 != 99_000 {
		t.Fatalf("latency %+v", l)
	}
	want := Floor{P50: 51, P95: 6, P99: 2} // (100-49) KB, (100-94) KB, (100-98) KB at 1 ns a byte
	if *l.HashFloor != want {
		t.Errorf("floor %+v, want %+v", *l.HashFloor, want)
	}
	if r := *l.RatioToHash; r.P50 != 50_000.0/51 || r.P95 != 95_000.0/6 || r.P99 != 99_000.0/2 {
		t.Errorf("ratio %+v", r)
	}
	if hashed != 3*(floorRuns+1) {
		t.Errorf("hashed %d times, want %d", hashed, 3*(floorRuns+1))
	}
	if l := f.latency(nil); l != (Latency{}) {
		t.Errorf("latency of nothing = %+v", l)
	}
}

// TestRunReportsHashFloor: a run's decision latencies carry their floor
// and ratio; rehydration latencies do not.
func TestRunReportsHashFloor(t *testing.T) {
	g, err := Generate(small(5, 40))
	if err != nil {
		t.Fatal(err)
	}
	store, _ := memWorkspace()
	rep, err := Run(context.Background(), g, store, &RunOptions{Threshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DecisionLatency.HashFloor == nil || rep.DecisionLatency.RatioToHash == nil {
		t.Fatalf("decision latency without a floor: %+v", rep.DecisionLatency)
	}
	for oc, l := range rep.DecisionLatencyByOutcome {
		if l.HashFloor == nil {
			t.Errorf("%s: no floor", oc)
		}
	}
	if rep.Rehydration.Whole.HashFloor != nil {
		t.Errorf("rehydration latency with a floor")
	}
}
