package adaptkit

import (
	"context"

	"github.com/hybridctx/hybridctx"
)

// ToolCall is one tool call of an SDK history: its id and tool name.
type ToolCall struct{ ID, Tool string }

// ToolText is one tool result of an SDK history: the call it answers and
// its text. Keep marks a result the adapter cannot replace by one text
// (content that is not all text).
type ToolText struct {
	CallID, Text string
	Keep         bool
}

// Compact applies the policy's history budget to the tool results of one
// SDK history (see CompactTexts); the Dispatcher's read tools are the ones
// whose answers are kept.
func (d *Dispatcher) Compact(ctx context.Context, calls []ToolCall, results []ToolText) ([]string, []bool, error) {
	return CompactTexts(ctx, d.compact, d.reads.Has, calls, results)
}

// NewCompactor returns the compactor of off's policy, telling obs (when
// non-nil) of every step, or nil when the policy has no history budget.
func NewCompactor(off *hybridctx.Offloader, obs hybridctx.CompactionObserver) *hybridctx.Compactor {
	if off == nil || !off.Policy().History.Enabled() {
		return nil
	}
	c, _ := hybridctx.NewCompactor(off, &hybridctx.CompactorOptions{Observer: obs})
	return c
}

// CompactTexts applies the history budget of c's policy (see
// docs/history.md) to the tool results of one SDK history, before a model
// call: it returns the new text of each result and whether it changed, or
// nil, nil when nothing changes (a nil c, or the content within the
// budget). A text that is a notice or a mask is a notice; the answer of a
// tool isRead names is kept (the adapter does not know the range it came
// from, and it was stored once already); any other text is an inline
// result. The error wraps hybridctx.ErrInvalidHistory for a history whose
// results and calls do not pair, or is the context's; the history is then
// unchanged.
func CompactTexts(ctx context.Context, c *hybridctx.Compactor, isRead func(string) bool, calls []ToolCall, results []ToolText) ([]string, []bool, error) {
	if c == nil {
		return nil, nil, ctx.Err()
	}
	ids := make([]string, len(calls))
	tools := make(map[string]string, len(calls))
	for i, tc := range calls {
		ids[i] = tc.ID
		tools[tc.ID] = tc.Tool
	}
	rs := make([]hybridctx.HistoryResult, len(results))
	for i, r := range results {
		tool := tools[r.CallID]
		h := hybridctx.HistoryResult{Call: hybridctx.Call{Tool: tool, ID: r.CallID}, Text: r.Text, Form: hybridctx.FormInline, Keep: r.Keep}
		if _, ok := hybridctx.ParseStoredText(r.Text); ok {
			h.Form = hybridctx.FormNotice
		} else if isRead(tool) {
			h.Keep = true
		}
		rs[i] = h
	}
	out, err := c.Compact(ctx, ids, rs)
	if err != nil || out.Masked == 0 {
		return nil, nil, err
	}
	texts := make([]string, len(results))
	changed := make([]bool, len(results))
	for i, r := range out.Results {
		texts[i], changed[i] = r.Text, r.Masked
	}
	return texts, changed, nil
}
