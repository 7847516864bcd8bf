package workload

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hybridctx/hybridctx/agent/loop"
)

// Report is what Run measured. Its JSON form is the output of
// `hybridctx-bench`.
type Report struct {
	// Results and ResultBytes count the tool results replayed; Sessions
	// the sessions they belong to; Threshold is the inline threshold.
	Results     int   `json:"results"`
	ResultBytes int64 `json:"result_bytes"`
	Sessions    int   `json:"sessions"`
	Threshold   int64 `json:"threshold"`
	// History weighs the conversations up to the last result's decision:
	// bytes as kept in context, and had every result been inlined. Ratio
	// is Bytes/WithoutOffload (docs/figures.md: at most 0.10).
	History HistoryReport `json:"history"`
	// HistoryWithReads is History once the model has also read a range of
	// every stored body (each read inlined as a recovered segment).
	HistoryWithReads HistoryReport `json:"history_with_reads"`
	// Decisions counts offload decisions by outcome.
	Decisions map[string]int `json:"decisions"`
	// DecisionLatency is the time from a tool returning its result to the
	// decision's event: serialization, classification, hashing, storage.
	// Next to its percentiles, HashFloor is the SHA-256 time of the bytes
	// of the decision at each percentile, measured in the same run, and
	// RatioToHash the latency over it (1.0 is the floor of a
	// content-addressed offload).
	DecisionLatency Latency `json:"decision_latency"`
	// DecisionLatencyByOutcome splits DecisionLatency by outcome: inline
	// decisions never touch the workspace, stored ones include the durable
	// write (fsync) on a directory workspace.
	DecisionLatencyByOutcome map[string]Latency `json:"decision_latency_by_outcome"`
	// Rehydration holds the read tool's latencies: Whole reads a whole
	// body, Ranged RangeBytes from its middle (both verify the whole body
	// first); Outcomes counts rehydration decisions by outcome.
	Rehydration RehydrationReport `json:"rehydration"`
	// Storage compares the bytes of every result that was stored
	// (offloaded or existing reference, duplicates included) with the
	// bytes of the distinct bodies they map to, and with every body in the
	// workspace (StoredBytes, which includes bodies of earlier runs when
	// the workspace was not fresh).
	Storage StorageReport `json:"storage"`
	// RoundTrip says whether every stored body read back bit-exact, whole
	// and in its range.
	RoundTrip RoundTripReport `json:"round_trip"`
	// ElapsedSeconds is the wall time of the whole run.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
}

// HistoryReport weighs histories.
type HistoryReport struct {
	Bytes          int64   `json:"bytes"`
	WithoutOffload int64   `json:"without_offload"`
	Ratio          float64 `json:"ratio"`
	// InvariantErrors counts conversations whose History.Verify failed
	// (HistoryWithReads only: Verify runs when a conversation ends).
	InvariantErrors int `json:"invariant_errors,omitempty"`
}

func (h *HistoryReport) add(s loop.Size) {
	h.Bytes += s.Bytes
	h.WithoutOffload += s.WithoutOffload
}

func (h *HistoryReport) finish() {
	if h.WithoutOffload > 0 {
		h.Ratio = float64(h.Bytes) / float64(h.WithoutOffload)
	}
}

// Latency summarizes durations in microseconds (nearest-rank percentiles).
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_us"`
	P95   float64 `json:"p95_us"`
	P99   float64 `json:"p99_us"`
	Max   float64 `json:"max_us"`
	// HashFloor and RatioToHash are set on decision latencies only.
	HashFloor   *Floor      `json:"hash_floor_us,omitempty"`
	RatioToHash *FloorRatio `json:"ratio_to_hash,omitempty"`
	// RatioToOwnHash, on decision latencies, is the percentiles of every
	// decision's latency over the SHA-256 time of its own bytes: p95 1.3
	// means 95% of the decisions took at most 1.3 times their hash.
	RatioToOwnHash *FloorRatio `json:"ratio_to_own_hash,omitempty"`
	// HashOnly, on decision latencies, is the percentiles of the SHA-256
	// times of the decisions' own bytes: the latencies of an offloader that
	// did nothing but hash. No decision that stores its body can beat it,
	// so its p99 is the least p99 this machine allows on this workload.
	HashOnly *Floor `json:"hash_only_us,omitempty"`
}

// RehydrationReport holds read latencies and outcomes.
type RehydrationReport struct {
	Whole    Latency        `json:"whole"`
	Ranged   Latency        `json:"ranged"`
	Outcomes map[string]int `json:"outcomes"`
}

// StorageReport compares stored bytes.
type StorageReport struct {
	BytesOffloaded  int64 `json:"bytes_offloaded"`
	UniqueBodies    int   `json:"unique_bodies"`
	UniqueBodyBytes int64 `json:"unique_body_bytes"`
	StoredBodies    int   `json:"stored_bodies"`
	StoredBytes     int64 `json:"stored_bytes"`
}

// RoundTripReport counts read-back checks.
type RoundTripReport struct {
	Checked    int  `json:"checked"`
	Mismatched int  `json:"mismatched"`
	OK         bool `json:"ok"`
}

// latencyOf summarizes d, sorting it.
func latencyOf(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	rank := func(p float64) float64 {
		return float64(d[nearestRank(p, len(d))]) / float64(time.Microsecond)
	}
	return Latency{Count: len(d), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: rank(1)}
}

// nearestRank is the index of the p-th percentile of n sorted values.
func nearestRank(p float64, n int) int {
	i := int(p*float64(n)+0.999999) - 1
	return min(max(i, 0), n-1)
}

func (r *runner) report(ctx context.Context, all []*session, elapsed time.Duration) (*Report, error) {
	rep := &Report{
		Sessions: len(all), Threshold: r.o.Threshold, Decisions: map[string]int{},
		Rehydration:    RehydrationReport{Outcomes: map[string]int{}},
		ElapsedSeconds: elapsed.Seconds(),
	}
	var whole, ranged []time.Duration
	var dec []sample
	byOutcome := map[string][]sample{}
	for _, s := range all {
		st := &s.st
		rep.Results += st.results
		rep.ResultBytes += st.resultBytes
		rep.History.add(st.resultHistory)
		rep.HistoryWithReads.add(st.history)
		rep.HistoryWithReads.InvariantErrors += st.invariantErrs
		for k, v := range st.outcomes {
			rep.Decisions[k] += v
		}
		for k, v := range st.rehydrations {
			rep.Rehydration.Outcomes[k] += v
		}
		dec = append(dec, st.decisions...)
		for k, v := range st.byOutcome {
			byOutcome[k] = append(byOutcome[k], v...)
		}
		whole = append(whole, st.whole...)
		ranged = append(ranged, st.ranged...)
		rep.Storage.BytesOffloaded += st.offloaded
		rep.RoundTrip.Checked += st.checked
		rep.RoundTrip.Mismatched += st.bad
	}
	rep.History.finish()
	rep.HistoryWithReads.finish()
	fl := newFloorMeter(r.now)
	rep.DecisionLatency = fl.latency(dec)
	rep.DecisionLatencyByOutcome = map[string]Latency{}
	for k, v := range byOutcome {
		rep.DecisionLatencyByOutcome[k] = fl.latency(v)
	}
	rep.Rehydration.Whole = latencyOf(whole)
	rep.Rehydration.Ranged = latencyOf(ranged)
	rep.RoundTrip.OK = rep.RoundTrip.Mismatched == 0
	rep.Storage.UniqueBodies = len(r.unique)
	for _, n := range r.unique {
		rep.Storage.UniqueBodyBytes += n
	}
	for info, err := range r.store.ListBodies(ctx) {
		if err != nil {
			return nil, fmt.Errorf("%w: listing bodies: %w", ErrRun, err)
		}
		rep.Storage.StoredBodies++
		rep.Storage.StoredBytes += info.Size
	}
	return rep, nil
}
