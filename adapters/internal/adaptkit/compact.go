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

// Compact applies the policy's history budget (see docs/history.md) to the
// tool results of one SDK history, before a model call: it returns the new
// text of each result and whether it changed, or nil, nil when nothing
// changes (no budget, or the content within it). A text that is a notice or
// a mask is a notice; a read tool's answer is kept (the adapter does not
// know the range it came from, and it was stored once already); any other
// text is an inline result. The error wraps hybridctx.ErrInvalidHistory for
// a history whose results and calls do not pair, or is the context's; the
// history is then unchanged.
func (d *Dispatcher) Compact(ctx context.Context, calls []ToolCall, results []ToolText) ([]string, []bool, error) {
	if d.compact == nil {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		return nil, nil, nil
	}
	ids := make([]string, len(calls))
	tools := make(map[string]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
		tools[c.ID] = c.Tool
	}
	rs := make([]hybridctx.HistoryResult, len(results))
	for i, r := range results {
		tool := tools[r.CallID]
		h := hybridctx.HistoryResult{Call: hybridctx.Call{Tool: tool, ID: r.CallID}, Text: r.Text, Form: hybridctx.FormInline, Keep: r.Keep}
		if _, ok := hybridctx.ParseStoredText(r.Text); ok {
			h.Form = hybridctx.FormNotice
		} else if d.reads.Has(tool) {
			h.Keep = true
		}
		rs[i] = h
	}
	out, err := d.compact.Compact(ctx, ids, rs)
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
