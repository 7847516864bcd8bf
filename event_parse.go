package hybridctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrInvalidEvent is wrapped by every error of ParseEvent: the line is not
// one progress event of docs/diagnostics.md.
var ErrInvalidEvent = errors.New("invalid progress event")

// eventIn is the wire shape ParseEvent accepts, the one MarshalJSON writes.
type eventIn struct {
	Type          *EventType `json:"type"`
	Sequence      *uint64    `json:"sequence"`
	Time          *string    `json:"time"`
	RunID         *string    `json:"run_id"`
	AgentID       *string    `json:"agent_id"`
	ParentAgentID *string    `json:"parent_agent_id"`
	Depth         *int       `json:"depth"`
	Diagnostics   *diagIn    `json:"diagnostics"`
	Compaction    *compIn    `json:"compaction"`
}

// compIn is the wire shape of a compaction step; every field is required.
type compIn struct {
	Stepped       *bool   `json:"stepped"`
	ResultsMasked *int64  `json:"results_masked"`
	InputsMasked  *int64  `json:"inputs_masked"`
	Failed        *int64  `json:"failed"`
	Before        *sizeIn `json:"before"`
	After         *sizeIn `json:"after"`
	Invalidates   *bool   `json:"invalidates_cached_prefix"`
	OverBudget    *bool   `json:"over_budget"`
	Shortfall     *string `json:"shortfall"`
}

// sizeIn is a HistorySize on the wire: the input parts are left out when 0.
type sizeIn struct {
	Bytes       *int64 `json:"bytes"`
	Tokens      *int64 `json:"tokens"`
	InputBytes  int64  `json:"input_bytes"`
	InputTokens int64  `json:"input_tokens"`
}

type diagIn struct {
	Operation       string  `json:"operation"`
	Outcome         string  `json:"outcome"`
	Content         string  `json:"content"`
	Reason          string  `json:"reason"`
	ObservedBytes   *int64  `json:"observed_bytes"`
	ConfiguredBytes int64   `json:"configured_bytes"`
	Reference       *string `json:"reference"`
	Attribution     struct {
		InputBytes  int64  `json:"input_bytes"`
		OutputBytes *int64 `json:"output_bytes"`
	} `json:"attribution"`
	View string `json:"view"`
}

// ParseEvent reads one progress event from its JSON line (the shape
// Event.MarshalJSON writes, docs/diagnostics.md). The diagnostics are built
// by the same constructors as a decision's, so a parsed event holds only a
// valid (outcome, reason) pair, numbers and reference; every field must be
// consistent with them (the attribution is checked, not trusted). A
// history_compaction line carries a compaction step instead, checked to be
// one Compactor.Compact can report (parseCompaction). Errors wrap
// ErrInvalidEvent and never quote the line.
func ParseEvent(line []byte) (*Event, error) {
	var in eventIn
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object of the event's fields", ErrInvalidEvent)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one value", ErrInvalidEvent)
	}
	if in.Type == nil || in.Sequence == nil || in.Time == nil || in.RunID == nil || in.AgentID == nil ||
		in.Depth == nil || (in.Diagnostics == nil) == (in.Compaction == nil) {
		return nil, fmt.Errorf("%w: a field is missing (or both diagnostics and compaction are given)", ErrInvalidEvent)
	}
	t, err := time.Parse(TimeLayout, *in.Time)
	if err != nil || t.Format(TimeLayout) != *in.Time {
		return nil, fmt.Errorf("%w: time is not in the event layout", ErrInvalidEvent)
	}
	if *in.Sequence == 0 || *in.Depth < 0 || (*in.Depth == 0) != (in.ParentAgentID == nil) {
		return nil, fmt.Errorf("%w: sequence, depth or parent out of range", ErrInvalidEvent)
	}
	e := &Event{Sequence: *in.Sequence, Time: t, RunID: *in.RunID, AgentID: *in.AgentID,
		ParentAgentID: in.ParentAgentID, Depth: *in.Depth}
	if in.Compaction != nil {
		e.Type = HistoryCompaction
		e.Compaction, err = parseCompaction(in.Compaction)
	} else if e.Diagnostics, err = parseDiagnostics(in.Diagnostics); err == nil {
		e.Type = OffloadDecision
		if e.Diagnostics.op == OpRehydration {
			e.Type = RehydrationDecision
		}
	}
	if err != nil {
		return nil, err
	}
	if *in.Type != e.Type {
		return nil, fmt.Errorf("%w: type does not match the event's contents", ErrInvalidEvent)
	}
	return e, nil
}

// parseDiagnostics rebuilds a snapshot through its constructor and checks
// that it renders back to what was given.
func parseDiagnostics(in *diagIn) (*Diagnostics, error) {
	opi, oci, rsi := enumIndex(opNames[:], in.Operation), enumIndex(outcomeNames[:], in.Outcome), enumIndex(reasonNames[:], in.Reason)
	if opi == 0 || oci == 0 || rsi == 0 {
		return nil, fmt.Errorf("%w: unknown operation, outcome or reason", ErrInvalidEvent)
	}
	op, oc, rs := Operation(opi), Outcome(oci), Reason(rsi)
	ref := ""
	if in.Reference != nil {
		ref = *in.Reference
	}
	observed := int64(-1)
	if in.ObservedBytes != nil {
		observed = *in.ObservedBytes
	}
	var d *Diagnostics
	var err error
	switch op {
	case OpOffload:
		d, err = newOffloadDiagnostics(oc, rs, observed, in.ConfiguredBytes, ref)
	default:
		vi := enumIndex(viewNames[:], in.View)
		if vi == 0 {
			return nil, fmt.Errorf("%w: unknown view", ErrInvalidEvent)
		}
		v := View(vi)
		given := 0
		if oc == InvalidReference {
			given = int(min(max(in.Attribution.InputBytes, -1), 1<<31))
		}
		d, err = newRehydrationDiagnostics(v, oc, rs, observed, in.ConfiguredBytes, ref, given)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if !sameWire(d.wire(), in) {
		return nil, fmt.Errorf("%w: diagnostics fields disagree with the decision", ErrInvalidEvent)
	}
	return d, nil
}

// enumIndex returns the value a name stands for in names, or 0 when it
// names none (0 is no enum's value).
func enumIndex(names []string, s string) uint8 {
	if i := slices.Index(names, s); s != "" && i > 0 && i < 256 {
		return uint8(i)
	}
	return 0
}

// sameWire reports whether a rebuilt snapshot renders every given field.
func sameWire(w diagJSON, in *diagIn) bool {
	eq := func(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	ref := (w.Reference == nil) == (in.Reference == nil) && (w.Reference == nil || *w.Reference == *in.Reference)
	view := in.View == ""
	if w.View != 0 {
		view = w.View.String() == in.View
	}
	return w.Content.String() == in.Content && eq(w.ObservedBytes, in.ObservedBytes) && ref && view &&
		w.Attribution.InputBytes == in.Attribution.InputBytes && eq(w.Attribution.OutputBytes, in.Attribution.OutputBytes)
}

// parseCompaction rebuilds a compaction step, checks it is one Compact can
// report, and that the fields it derives (invalidation) are the ones given.
func parseCompaction(in *compIn) (*CompactionStep, error) {
	if in.Stepped == nil || in.ResultsMasked == nil || in.InputsMasked == nil || in.Failed == nil ||
		in.Before == nil || in.After == nil || in.Invalidates == nil || in.OverBudget == nil ||
		in.Before.Bytes == nil || in.Before.Tokens == nil || in.After.Bytes == nil || in.After.Tokens == nil {
		return nil, fmt.Errorf("%w: a compaction field is missing", ErrInvalidEvent)
	}
	size := func(z *sizeIn) HistorySize {
		return HistorySize{Bytes: *z.Bytes, Tokens: *z.Tokens, InputBytes: z.InputBytes, InputTokens: z.InputTokens}
	}
	s := &CompactionStep{stepped: *in.Stepped, masked: *in.ResultsMasked, inputsMasked: *in.InputsMasked,
		failed: *in.Failed, before: size(in.Before), after: size(in.After), overBudget: *in.OverBudget}
	if in.Shortfall != nil {
		i := enumIndex(shortfallNames[:], *in.Shortfall)
		if i == 0 {
			return nil, fmt.Errorf("%w: unknown shortfall", ErrInvalidEvent)
		}
		s.shortfall = Shortfall(i)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if s.InvalidatesCachedPrefix() != *in.Invalidates {
		return nil, fmt.Errorf("%w: invalidation disagrees with the masks", ErrInvalidEvent)
	}
	return s, nil
}
