package loop

import (
	"context"
	"fmt"

	"github.com/hybridctx/hybridctx"
)

// ProblemOverBudget is the rule Verify names when the tool content of a
// history was still over its budget after its last compaction; the error's
// Shortfall says why it could not hold.
const ProblemOverBudget = "tool content over the history budget"

// budgetState is what a history remembers of its budget: the policy, and
// the tool messages its last compaction weighed and what that step
// reported.
type budgetState struct {
	policy hybridctx.Policy
	tools  int
	last   *hybridctx.Compaction
}

// LastCompaction returns the report of the history's last compaction (the
// loop compacts before each model call when the policy has a history
// budget), or nil.
func (h *History) LastCompaction() *hybridctx.Compaction {
	if h.budget == nil {
		return nil
	}
	return h.budget.last
}

// compact applies the history budget to h's tool messages (see
// docs/history.md): it runs between turns, when every tool call has its
// answer. On an error h is unchanged.
func (h *History) compact(ctx context.Context, c *hybridctx.Compactor) error {
	var calls []string
	var rs []hybridctx.HistoryResult
	var at []int // message index of each result
	for i, m := range h.msgs {
		switch m.Role {
		case RoleAssistant:
			for _, tc := range m.ToolCalls {
				calls = append(calls, tc.ID)
			}
		case RoleTool:
			r := entry(m)
			r.Ordered, r.CallsBefore = true, len(calls)
			rs = append(rs, r)
			at = append(at, i)
		}
	}
	out, err := c.Compact(ctx, calls, rs)
	if err != nil {
		return err
	}
	for k, r := range out.Results {
		if !r.Masked {
			continue
		}
		m := &h.msgs[at[k]]
		m.Content, m.Masked = r.Text, true
		if r.Decision != nil {
			m.Offload = r.Decision
		}
	}
	h.budget = &budgetState{policy: c.Offloader().Policy(), tools: len(rs), last: out}
	return nil
}

// entry is how the compactor sees tool message m.
func entry(m Message) hybridctx.HistoryResult {
	call := hybridctx.Call{Tool: m.ToolName, ID: m.ToolCallID}
	switch {
	case m.Masked:
		return hybridctx.HistoryResult{Call: call, Text: m.Content, Form: hybridctx.FormNotice}
	case recovered(m):
		return hybridctx.RecoveredResult(call, m.Offload.Segment())
	case m.Offload != nil && m.Offload.Notice != "" && m.Content == m.Offload.Notice && !m.Offload.Ref.IsZero():
		return hybridctx.HistoryResult{Call: call, Text: m.Content, Form: hybridctx.FormNotice}
	}
	return hybridctx.HistoryResult{Call: call, Text: m.Content, Form: hybridctx.FormInline}
}

// verifyBudget checks that the tool messages the last compaction weighed
// hold at most the budget, or that the step reported why they could not.
func (h *History) verifyBudget() error {
	b := h.budget
	if b == nil || !b.policy.History.Enabled() {
		return nil
	}
	var n int64
	var last, count int
	for i, m := range h.msgs {
		if m.Role != RoleTool || count == b.tools {
			continue
		}
		count++
		last = i
		if b.policy.Tokenizer != nil {
			n += b.policy.Tokenizer.CountTokens(m.Content)
		} else {
			n += int64(len(m.Content))
		}
	}
	if n <= b.policy.History.Budget {
		return nil
	}
	e := &InvariantError{Index: last, Problem: ProblemOverBudget, Bytes: n, Threshold: b.policy.History.Budget}
	if b.last != nil && b.last.OverBudget {
		e.Shortfall = b.last.Shortfall
	}
	return e
}

// String names the shortfall for the error text.
func shortfallText(s hybridctx.Shortfall) string {
	if s == 0 {
		return ""
	}
	return fmt.Sprintf(" (%v)", s)
}
