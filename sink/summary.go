package sink

import (
	"context"
	"sync"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

// Index bounds of the categorical enums, for the fixed-size count tables.
const (
	maxOutcome = hybridctx.NumOutcomes
	maxReason  = hybridctx.NumReasons
)

// Summary aggregates the events of a run: counts per operation, outcome and
// reason, bytes kept out of context, bytes rehydrated and the largest inline
// result. It holds only categorical values and byte counts. It is safe for
// concurrent use; the zero value is ready.
type Summary struct {
	mu       sync.Mutex
	counts   [maxOutcome][maxReason]int64
	events   int64
	agents   map[string]struct{}
	maxDepth int
	kept     int64
	rehyd    int64
	inlineMx int64
	in, out  int64
	history  HistoryReport
}

// NewSummary returns an empty Summary.
func NewSummary() *Summary { return &Summary{} }

// Emit implements hybridctx.Sink. It never fails. A history_compaction
// event counts its step in the history report (as ObserveCompaction does),
// and not among the decisions.
func (s *Summary) Emit(_ context.Context, e *hybridctx.Event) error {
	if e.Compaction != nil {
		s.ObserveCompaction(e.Compaction.Compaction())
		return nil
	}
	d := e.Diagnostics
	if d == nil {
		return nil
	}
	oc, r := d.Outcome(), d.Reason()
	in, out, hasOut := d.Attribution()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events++
	if s.agents == nil {
		s.agents = map[string]struct{}{}
	}
	s.agents[e.AgentID] = struct{}{}
	s.maxDepth = max(s.maxDepth, e.Depth)
	if int(oc) < maxOutcome && int(r) < maxReason {
		s.counts[oc][r]++
	}
	s.kept += KeptOutOfContext(d)
	switch oc.Operation() {
	case hybridctx.OpOffload:
		s.in += in
		if hasOut {
			s.out += out
		}
	}
	switch {
	case oc == hybridctx.Resolved:
		s.rehyd += out
	case oc == hybridctx.Inline && r == hybridctx.BelowThreshold:
		s.inlineMx = max(s.inlineMx, in)
	}
	return nil
}

// ObserveCompaction implements hybridctx.CompactionObserver: it counts the
// history's compaction steps, the results they masked and what they took
// out of the conversation. A Summary that is a sink of the compactor's
// reporter counts each step from its history_compaction event already: make
// it the compactor's observer only when the compactor reports to no
// reporter, or every step counts twice.
func (s *Summary) ObserveCompaction(c *hybridctx.Compaction) {
	if c == nil || !c.Stepped && c.InputsMasked == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &s.history
	if c.Stepped {
		h.Compactions++
	}
	h.Masked += int64(c.Masked)
	h.InputsMasked += int64(c.InputsMasked)
	h.BytesTakenOut += c.Before.Bytes - c.After.Bytes
	h.TokensTakenOut += c.Before.Tokens - c.After.Tokens
	if c.OverBudget {
		h.OverBudget++
	}
}

// HistoryReport counts what the history budget did in a run (see
// docs/history.md): compaction steps, results masked, bytes and tokens they
// took out of the conversation, and steps that could not bring the history
// within its budget.
type HistoryReport struct {
	Compactions    int64 `json:"compactions"`
	Masked         int64 `json:"masked"`
	InputsMasked   int64 `json:"inputs_masked,omitempty"`
	BytesTakenOut  int64 `json:"bytes_taken_out"`
	TokensTakenOut int64 `json:"tokens_taken_out"`
	OverBudget     int64 `json:"over_budget"`
}

// KeptOutOfContext returns the bytes one decision kept out of the
// conversation: for offloaded and existing_reference, the result's size
// minus the 82-byte reference that replaced it (never negative); 0 for every
// other outcome.
func KeptOutOfContext(d *hybridctx.Diagnostics) int64 {
	if oc := d.Outcome(); oc != hybridctx.Offloaded && oc != hybridctx.ExistingReference {
		return 0
	}
	in, _, _ := d.Attribution()
	return max(0, in-artifact.RefLen)
}

// SummaryReport is a snapshot of a Summary; its JSON shape is
//
//	{"events": N, "agents": N, "max_depth": N,
//	 "decisions": {"<operation>": {"<outcome>": {"<reason>": N}}},
//	 "outcomes": {"<outcome>": N},
//	 "bytes_kept_out_of_context": N, "bytes_rehydrated": N,
//	 "largest_inline_bytes": N,
//	 "offload_input_bytes": N, "offload_output_bytes": N,
//	 "history": {"compactions": N, "masked": N, "bytes_taken_out": N,
//	             "tokens_taken_out": N, "over_budget": N}}
//
// with snake_case category names and only the categories that occurred.
type SummaryReport struct {
	// Events counts the decision events seen (history_compaction events
	// are counted in History); Agents the distinct agent ids among them;
	// MaxDepth the deepest agent.
	Events   int64 `json:"events"`
	Agents   int   `json:"agents"`
	MaxDepth int   `json:"max_depth"`
	// Decisions counts events per operation, outcome and reason.
	Decisions map[hybridctx.Operation]map[hybridctx.Outcome]map[hybridctx.Reason]int64 `json:"decisions"`
	// Outcomes counts events per outcome.
	Outcomes map[hybridctx.Outcome]int64 `json:"outcomes"`
	// BytesKeptOutOfContext sums KeptOutOfContext over the events.
	BytesKeptOutOfContext int64 `json:"bytes_kept_out_of_context"`
	// BytesRehydrated sums the bytes returned by resolved rehydrations.
	BytesRehydrated int64 `json:"bytes_rehydrated"`
	// LargestInlineBytes is the largest tool result kept inline below the
	// threshold (recovered segments are counted in BytesRehydrated).
	LargestInlineBytes int64 `json:"largest_inline_bytes"`
	// OffloadInputBytes sums the results offload decided;
	// OffloadOutputBytes the bytes those decisions put into the
	// conversation by the diagnostics' attribution (82 per reference).
	OffloadInputBytes  int64 `json:"offload_input_bytes"`
	OffloadOutputBytes int64 `json:"offload_output_bytes"`
	// History counts the history budget's compaction steps (all zero
	// without one).
	History HistoryReport `json:"history"`
}

// Count returns the number of events with the given outcome and reason.
func (r SummaryReport) Count(o hybridctx.Outcome, reason hybridctx.Reason) int64 {
	return r.Decisions[o.Operation()][o][reason]
}

// Report returns a snapshot.
func (s *Summary) Report() SummaryReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := SummaryReport{
		Events: s.events, Agents: len(s.agents), MaxDepth: s.maxDepth,
		Decisions:             map[hybridctx.Operation]map[hybridctx.Outcome]map[hybridctx.Reason]int64{},
		Outcomes:              map[hybridctx.Outcome]int64{},
		BytesKeptOutOfContext: s.kept, BytesRehydrated: s.rehyd, LargestInlineBytes: s.inlineMx,
		OffloadInputBytes: s.in, OffloadOutputBytes: s.out, History: s.history,
	}
	for oc := range maxOutcome {
		for rs := range maxReason {
			n := s.counts[oc][rs]
			if n == 0 {
				continue
			}
			o := hybridctx.Outcome(oc)
			op := o.Operation()
			if r.Decisions[op] == nil {
				r.Decisions[op] = map[hybridctx.Outcome]map[hybridctx.Reason]int64{}
			}
			if r.Decisions[op][o] == nil {
				r.Decisions[op][o] = map[hybridctx.Reason]int64{}
			}
			r.Decisions[op][o][hybridctx.Reason(rs)] = n
			r.Outcomes[o] += n
		}
	}
	return r
}
