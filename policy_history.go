package hybridctx

import (
	"fmt"
	"strings"
)

// HistoryPolicy bounds a whole conversation's tool content (see
// docs/history.md). The zero value turns the history budget off.
type HistoryPolicy struct {
	// Budget is the tool-message content a history may hold: bytes, or
	// tokens when the policy has a Tokenizer. 0 means no budget.
	Budget int64
	// LowWater is what a compaction step brings the tool content down to
	// once it went over Budget. 0 means Budget/2; it must be <= Budget.
	LowWater int64
	// KeepRecent results, the most recent ones, are never masked. 0 means
	// DefaultKeepRecent; a negative value keeps none.
	KeepRecent int
	// ExcludeTools names the tools whose results (and, with MaskInputs,
	// inputs) are never masked.
	ExcludeTools []string
	// MaskInputs masks tool inputs too: once a call is answered, each
	// string value of its arguments longer than the inline threshold (and
	// than a mask) is stored and replaced by its mask, the arguments still
	// valid JSON of the same shape (HistoryResult.Input). The budget then
	// weighs inputs and results together.
	MaskInputs bool
}

// DefaultKeepRecent is HistoryPolicy.KeepRecent when it is zero.
const DefaultKeepRecent = 3

// Enabled reports whether the policy sets a budget.
func (h HistoryPolicy) Enabled() bool { return h.Budget > 0 }

// LowWaterMark returns LowWater, or Budget/2 when it is zero.
func (h HistoryPolicy) LowWaterMark() int64 {
	if h.LowWater > 0 {
		return h.LowWater
	}
	return h.Budget / 2
}

// Recent returns how many recent results are never masked: KeepRecent, 3
// when it is zero, 0 when it is negative.
func (h HistoryPolicy) Recent() int {
	switch {
	case h.KeepRecent == 0:
		return DefaultKeepRecent
	case h.KeepRecent < 0:
		return 0
	}
	return h.KeepRecent
}

// excluded reports whether tool's results are never masked.
func (h HistoryPolicy) excluded(tool string) bool {
	for _, t := range h.ExcludeTools {
		if t == tool {
			return true
		}
	}
	return false
}

// validate checks the history fields of a policy.
func (h HistoryPolicy) validate() error {
	switch {
	case h.Budget < 0 || h.LowWater < 0:
		return fmt.Errorf("%w: history budget and low water must be >= 0", ErrInvalidPolicy)
	case h.Budget == 0 && (h.LowWater != 0 || h.KeepRecent != 0 || len(h.ExcludeTools) != 0 || h.MaskInputs):
		return fmt.Errorf("%w: history settings without a history budget", ErrInvalidPolicy)
	case h.LowWater > h.Budget:
		return fmt.Errorf("%w: history low water %d above the budget %d", ErrInvalidPolicy, h.LowWater, h.Budget)
	}
	for _, t := range h.ExcludeTools {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("%w: an excluded tool needs a name", ErrInvalidPolicy)
		}
	}
	return nil
}
