package hybridctx

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// HistoryCompaction is the event of one compaction step (docs/diagnostics.md,
// "The compaction event"): Event.Compaction is set, Event.Diagnostics is nil.
const HistoryCompaction EventType = "history_compaction"

// CompactionStep is the privacy-safe snapshot of one compaction step: counters,
// sizes and closed categories only, never a text, a tool name, a call id or a
// reference. It is immutable; only this package builds it, from a Compaction
// (Compactor.Compact) or from an event line (ParseEvent).
type CompactionStep struct {
	stepped      bool
	masked       int64
	inputsMasked int64
	failed       int64
	before       HistorySize
	after        HistorySize
	overBudget   bool
	shortfall    Shortfall
}

// Stepped reports whether the history was over its budget and a step ran;
// false for a call that only masked tool-call inputs.
func (s *CompactionStep) Stepped() bool { return s.stepped }

// ResultsMasked counts the tool results the step masked.
func (s *CompactionStep) ResultsMasked() int64 { return s.masked }

// InputsMasked counts the tool-call input strings masked.
func (s *CompactionStep) InputsMasked() int64 { return s.inputsMasked }

// Failed counts the results (and input strings) whose offload failed.
func (s *CompactionStep) Failed() int64 { return s.failed }

// Before and After weigh the history's tool content around the step.
func (s *CompactionStep) Before() HistorySize { return s.before }

// After weighs the history's tool content after the step.
func (s *CompactionStep) After() HistorySize { return s.after }

// InvalidatesCachedPrefix reports whether the step changed an earlier
// message, so a provider's cached prefix ends at its first change: true
// exactly when it masked a result or an input (docs/history.md).
func (s *CompactionStep) InvalidatesCachedPrefix() bool { return s.masked+s.inputsMasked > 0 }

// OverBudget reports whether the history is still over its budget; Shortfall
// says why (0 when it is not).
func (s *CompactionStep) OverBudget() bool { return s.overBudget }

// Shortfall says why the history is still over its budget, or 0.
func (s *CompactionStep) Shortfall() Shortfall { return s.shortfall }

// Compaction returns the step as a Compaction without results, the form a
// CompactionObserver takes (sink.Summary counts steps either way).
func (s *CompactionStep) Compaction() *Compaction {
	return &Compaction{Stepped: s.stepped, Masked: int(s.masked), InputsMasked: int(s.inputsMasked),
		Failed: int(s.failed), Before: s.before, After: s.after, OverBudget: s.overBudget, Shortfall: s.shortfall}
}

// newCompactionStep snapshots what a Compact call did, or returns nil when
// it did nothing worth an event (no step ran and no input was masked).
func newCompactionStep(c *Compaction) *CompactionStep {
	if !c.Stepped && c.InputsMasked == 0 {
		return nil
	}
	return &CompactionStep{stepped: c.Stepped, masked: int64(c.Masked), inputsMasked: int64(c.InputsMasked),
		failed: int64(c.Failed), before: c.Before, after: c.After, overBudget: c.OverBudget, shortfall: c.Shortfall}
}

// check validates a snapshot read back from an event line: what Compact can
// produce and nothing else.
func (s *CompactionStep) check() error {
	sizes := []int64{s.masked, s.inputsMasked, s.failed, s.before.Bytes, s.before.Tokens, s.before.InputBytes,
		s.before.InputTokens, s.after.Bytes, s.after.Tokens, s.after.InputBytes, s.after.InputTokens}
	for _, n := range sizes {
		if n < 0 {
			return fmt.Errorf("%w: negative counter", errOutOfRange)
		}
	}
	for _, h := range []HistorySize{s.before, s.after} {
		if h.InputBytes > h.Bytes || h.InputTokens > h.Tokens {
			return fmt.Errorf("%w: inputs larger than the content", errOutOfRange)
		}
	}
	switch {
	case !s.stepped && s.inputsMasked == 0:
		return fmt.Errorf("%w: nothing happened", errOutOfRange)
	case !s.stepped && (s.masked > 0 || s.overBudget):
		return fmt.Errorf("%w: results masked or over budget without a step", errOutOfRange)
	case s.overBudget != (s.shortfall != 0):
		return fmt.Errorf("%w: over budget and shortfall disagree", errOutOfRange)
	case s.shortfall != 0 && (s.shortfall < ShortKeepRecent || s.shortfall > ShortMasks):
		return fmt.Errorf("%w: unknown shortfall", errOutOfRange)
	case s.shortfall == ShortOffloadFailed && s.failed == 0:
		return fmt.Errorf("%w: offload_failed without a failure", errOutOfRange)
	case s.masked+s.inputsMasked == 0 && s.before != s.after:
		return fmt.Errorf("%w: size changed with nothing masked", errOutOfRange)
	}
	return nil
}

// compactionJSON is the wire shape of docs/diagnostics.md, "The compaction
// event".
type compactionJSON struct {
	Stepped       bool        `json:"stepped"`
	ResultsMasked int64       `json:"results_masked"`
	InputsMasked  int64       `json:"inputs_masked"`
	Failed        int64       `json:"failed"`
	Before        HistorySize `json:"before"`
	After         HistorySize `json:"after"`
	Invalidates   bool        `json:"invalidates_cached_prefix"`
	OverBudget    bool        `json:"over_budget"`
	Shortfall     *string     `json:"shortfall"`
}

func (s *CompactionStep) wire() compactionJSON {
	w := compactionJSON{Stepped: s.stepped, ResultsMasked: s.masked, InputsMasked: s.inputsMasked, Failed: s.failed,
		Before: s.before, After: s.after, Invalidates: s.InvalidatesCachedPrefix(), OverBudget: s.overBudget}
	if s.shortfall != 0 {
		n := s.shortfall.String()
		w.Shortfall = &n
	}
	return w
}

// MarshalJSON renders the snake_case shape of docs/diagnostics.md.
func (s *CompactionStep) MarshalJSON() ([]byte, error) { return json.Marshal(s.wire()) }

// String renders one safe line of counters.
func (s *CompactionStep) String() string {
	if s == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString("compaction stepped=")
	b.WriteString(strconv.FormatBool(s.stepped))
	for _, f := range []struct {
		k string
		v int64
	}{{"results_masked", s.masked}, {"inputs_masked", s.inputsMasked}, {"failed", s.failed},
		{"before_bytes", s.before.Bytes}, {"before_tokens", s.before.Tokens},
		{"after_bytes", s.after.Bytes}, {"after_tokens", s.after.Tokens}} {
		b.WriteString(" " + f.k + "=" + strconv.FormatInt(f.v, 10))
	}
	b.WriteString(" invalidates_cached_prefix=" + strconv.FormatBool(s.InvalidatesCachedPrefix()))
	b.WriteString(" over_budget=" + strconv.FormatBool(s.overBudget))
	if s.shortfall != 0 {
		b.WriteString(" shortfall=" + s.shortfall.String())
	}
	return b.String()
}

// GoString makes %#v print the same safe line.
func (s *CompactionStep) GoString() string { return "hybridctx.CompactionStep{" + s.String() + "}" }

// Format makes every verb print only the safe line.
func (s *CompactionStep) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(s.GoString()))
		return
	}
	_, _ = f.Write([]byte(s.String()))
}

// LogValue implements slog.LogValuer with the fields of the JSON shape.
func (s *CompactionStep) LogValue() slog.Value {
	size := func(h HistorySize) slog.Value {
		return slog.GroupValue(slog.Int64("bytes", h.Bytes), slog.Int64("tokens", h.Tokens),
			slog.Int64("input_bytes", h.InputBytes), slog.Int64("input_tokens", h.InputTokens))
	}
	attrs := []slog.Attr{
		slog.Bool("stepped", s.stepped),
		slog.Int64("results_masked", s.masked),
		slog.Int64("inputs_masked", s.inputsMasked),
		slog.Int64("failed", s.failed),
		slog.Any("before", size(s.before)),
		slog.Any("after", size(s.after)),
		slog.Bool("invalidates_cached_prefix", s.InvalidatesCachedPrefix()),
		slog.Bool("over_budget", s.overBudget),
	}
	if s.shortfall != 0 {
		attrs = append(attrs, slog.String("shortfall", s.shortfall.String()))
	}
	return slog.GroupValue(attrs...)
}

// reportCompaction delivers the event of one compaction step, if ctx
// carries a reporter.
func reportCompaction(ctx context.Context, clock func() time.Time, s *CompactionStep) {
	deliver(ctx, clock, &Event{Type: HistoryCompaction, Compaction: s})
}
