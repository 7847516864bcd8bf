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
	// Every decision's own ratio is (i+1) ms over (100-i) µs: 10 for the
	// fastest, rising with i; the percentiles are taken over those ratios.
	own := func(i int) float64 { return float64(i+1) * 1000 / float64(100-i) }
	if r := *l.RatioToOwnHash; r.P50 != own(49) || r.P95 != own(94) || r.P99 != own(98) {
		t.Errorf("own ratios %+v, want %v %v %v", r, own(49), own(94), own(98))
	}
	// The hash-only percentiles are those of the floors themselves: 1 to
	// 100 µs, whichever decision they belong to.
	if h := *l.HashOnly; h != (Floor{P50: 50, P95: 95, P99: 99}) {
		t.Errorf("hash only %+v", h)
	}
	// Each size is hashed once (floorRuns passes and a warm-up), for the
	// percentiles and the own ratios together.
	if hashed != 100*(floorRuns+1) {
		t.Errorf("hashed %d times, want %d", hashed, 100*(floorRuns+1))
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
	if l := rep.DecisionLatency; l.HashFloor == nil || l.RatioToHash == nil || l.RatioToOwnHash == nil || l.RatioToOwnHash.P50 <= 0 ||
		l.HashOnly == nil || l.HashOnly.P99 <= 0 {
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
