package workload

import (
	"cmp"
	"crypto/sha256"
	"slices"
	"time"
)

// Floor is the SHA-256 time, in microseconds, of the bytes of the decision
// at each latency percentile: what hashing alone costs for that decision on
// this machine, measured in the same run.
type Floor struct {
	P50 float64 `json:"p50_us"`
	P95 float64 `json:"p95_us"`
	P99 float64 `json:"p99_us"`
}

// FloorRatio is each latency percentile over its Floor; 0 when the floor
// measured 0 (a clock too coarse). As Latency.RatioToOwnHash it is instead
// the percentiles of the decisions' own ratios.
type FloorRatio struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// sample is one decision: its latency and the bytes of its result.
type sample struct {
	d time.Duration
	n int
}

// floorRuns is how many times a floor is measured, after one warm-up pass;
// the fastest counts (a floor: what hashing those bytes costs at best on
// this machine, not including a preemption by another process).
const floorRuns = 5

// floorMeter times SHA-256 over buffers of the sizes asked for, once per
// size, with the run's clock.
type floorMeter struct {
	now  func() time.Time
	hash func(b []byte) // SHA-256; tests count instead
	buf  []byte
	memo map[int]time.Duration
}

func newFloorMeter(now func() time.Time) *floorMeter {
	return &floorMeter{now: now, hash: func(b []byte) { _ = sha256.Sum256(b) }, memo: map[int]time.Duration{}}
}

// hashTime is the fastest of floorRuns SHA-256 passes over n bytes.
func (f *floorMeter) hashTime(n int) time.Duration {
	if d, ok := f.memo[n]; ok {
		return d
	}
	if len(f.buf) < n {
		f.buf = make([]byte, n)
		for i := range f.buf {
			f.buf[i] = byte(i * 131)
		}
	}
	f.hash(f.buf[:n]) // warm-up: caches, page faults
	var runs [floorRuns]time.Duration
	for i := range runs {
		t0 := f.now()
		f.hash(f.buf[:n])
		runs[i] = f.now().Sub(t0)
	}
	f.memo[n] = slices.Min(runs[:])
	return f.memo[n]
}

// latency summarizes the decisions like latencyOf, with the hash floor of
// the decision at each percentile. It sorts s.
func (f *floorMeter) latency(s []sample) Latency {
	if len(s) == 0 {
		return Latency{}
	}
	slices.SortStableFunc(s, func(a, b sample) int { return cmp.Compare(a.d, b.d) })
	d := make([]time.Duration, len(s))
	for i, x := range s {
		d[i] = x.d
	}
	l := latencyOf(d)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	at := func(p float64) (floor, ratio float64) {
		x := s[nearestRank(p, len(s))]
		h := f.hashTime(x.n)
		if h > 0 {
			ratio = float64(x.d) / float64(h)
		}
		return us(h), ratio
	}
	var fl Floor
	var r FloorRatio
	fl.P50, r.P50 = at(0.50)
	fl.P95, r.P95 = at(0.95)
	fl.P99, r.P99 = at(0.99)
	l.HashFloor, l.RatioToHash = &fl, &r
	l.RatioToOwnHash, l.HashOnly = f.own(s)
	return l
}

// own is the percentiles of every decision's latency over the hash floor of
// its own bytes (nil when no floor measured above 0), and the percentiles of
// those floors themselves.
func (f *floorMeter) own(s []sample) (*FloorRatio, *Floor) {
	ratios := make([]float64, 0, len(s))
	hashes := make([]time.Duration, len(s))
	for i, x := range s {
		h := f.hashTime(x.n)
		hashes[i] = h
		if h > 0 {
			ratios = append(ratios, float64(x.d)/float64(h))
		}
	}
	hl := latencyOf(hashes)
	only := &Floor{P50: hl.P50, P95: hl.P95, P99: hl.P99}
	if len(ratios) == 0 {
		return nil, only
	}
	slices.Sort(ratios)
	at := func(p float64) float64 { return ratios[nearestRank(p, len(ratios))] }
	return &FloorRatio{P50: at(0.50), P95: at(0.95), P99: at(0.99)}, only
}
