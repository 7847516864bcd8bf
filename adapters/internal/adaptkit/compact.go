package adaptkit

import (
	"context"

	"github.com/hybridctx/hybridctx"
)

// ToolCall is one tool call of an SDK history: its id, its tool name and
// its arguments, as the library holds them: Args for JSON text (OpenAI,
// Eino, langchaingo), else Value for a Go value (Anthropic, Genkit; see
// inputJSON). With HistoryPolicy.MaskInputs the arguments of an answered
// call are masked (docs/history.md, "Tool inputs"); a call without
// arguments gives neither.
type ToolCall struct {
	ID, Tool string
	Args     string
	Value    any
}

// Compacted is what compacting one SDK history changes: the new text of
// each result (Texts[i] where Changed[i]) and the new arguments of each
// call (Calls[i] where Calls[i].Changed; Calls is nil when no call
// changed), in the order given.
type Compacted struct {
	Texts   []string
	Changed []bool
	Calls   []CallArgs
}

// CallArgs is one call's arguments after compaction, in the form the
// adapter gave them: Args when it gave JSON text, Value (of the type it
// gave) when it gave a Go value. Changed is false when they stay as they
// were.
type CallArgs struct {
	Args    string
	Value   any
	Changed bool
}

// ToolText is one tool result of an SDK history: the call it answers and
// its text. Keep marks a result the adapter cannot replace by one text
// (content that is not all text). CallsBefore is how many of the history's
// tool calls come before the result (len(calls) when the adapter, walking
// the history in order, meets it): the call it answers must be one of
// them.
type ToolText struct {
	CallID, Text string
	Keep         bool
	CallsBefore  int
}

// Compact applies the policy's history budget to the tool results of one
// SDK history, and MaskInputs to its calls' arguments (see CompactTexts);
// the Dispatcher's read tools are the ones
// whose answers are kept.
func (d *Dispatcher) Compact(ctx context.Context, calls []ToolCall, results []ToolText) (*Compacted, error) {
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
// call, and with HistoryPolicy.MaskInputs masks the arguments of every
// answered call (docs/history.md, "Tool inputs"): it returns what changed,
// or nil when nothing does (a nil c, or the content within the budget and
// no input to mask). A text that reads like a notice or a mask is given to
// the compactor as one, which masks it without storing it only when it is
// byte for byte the notice of a body the owner holds and stores any other
// text first (docs/history.md, "Notices and masks in a history"); the
// answer of a tool isRead names is kept (the adapter does not know the
// range it came from, and it was stored once already); any other text is an
// inline result. A call's arguments go to the compactor with the result
// that answers it, so a call without a result is never touched; arguments
// given as a Go value change only when the masked JSON decodes back into a
// value of the same type that encodes to it (inputJSON, fromInputJSON).
// The error wraps hybridctx.ErrInvalidHistory for a history whose results
// and calls do not pair, or with a result before its call, or is the
// context's; the history is then unchanged.
func CompactTexts(ctx context.Context, c *hybridctx.Compactor, isRead func(string) bool, calls []ToolCall, results []ToolText) (*Compacted, error) {
	if c == nil {
		return nil, ctx.Err()
	}
	maskInputs := c.Offloader().Policy().History.MaskInputs
	ids := make([]string, len(calls))
	index := make(map[string]int, len(calls))
	for i, tc := range calls {
		ids[i] = tc.ID
		if _, dup := index[tc.ID]; !dup {
			index[tc.ID] = i
		}
	}
	rs := make([]hybridctx.HistoryResult, len(results))
	owner := make([]int, len(results)) // the call each result passed the input of, or -1
	for i, r := range results {
		owner[i] = -1
		var tool string
		k, ok := index[r.CallID]
		if ok {
			tool = calls[k].Tool
		}
		h := hybridctx.HistoryResult{Call: hybridctx.Call{Tool: tool, ID: r.CallID}, Text: r.Text, Form: hybridctx.FormInline, Keep: r.Keep,
			Ordered: true, CallsBefore: r.CallsBefore}
		if _, ok := hybridctx.ParseStoredText(r.Text); ok {
			h.Form = hybridctx.FormNotice
		} else if isRead(tool) {
			h.Keep = true
		}
		if maskInputs && ok && k < r.CallsBefore {
			h.Input = callJSON(calls[k])
			owner[i] = k
		}
		rs[i] = h
	}
	out, err := c.Compact(ctx, ids, rs)
	if err != nil || (out.Masked == 0 && out.InputsMasked == 0) {
		return nil, err
	}
	res := &Compacted{Texts: make([]string, len(results)), Changed: make([]bool, len(results))}
	for i, r := range out.Results {
		res.Texts[i], res.Changed[i] = r.Text, r.Masked
	}
	changed := out.Masked > 0
	if out.InputsMasked > 0 {
		res.Calls = make([]CallArgs, len(calls))
		for i, r := range out.Results {
			if k := owner[i]; k >= 0 && r.Input != rs[i].Input {
				res.Calls[k] = callArgs(calls[k], r.Input)
				changed = changed || res.Calls[k].Changed
			}
		}
	}
	if !changed {
		return nil, nil
	}
	return res, nil
}

// callJSON returns the arguments of tc as JSON text: Args, or Value
// encoded; "" when there are none, Value cannot be encoded, or it is a
// []byte (encoded as base64: a mask could not replace it).
func callJSON(tc ToolCall) string {
	if tc.Args != "" || tc.Value == nil {
		return tc.Args
	}
	if _, ok := tc.Value.([]byte); ok {
		return ""
	}
	b, err := inputJSON(tc.Value)
	if err != nil {
		return ""
	}
	return string(b)
}

// callArgs returns the masked arguments of tc in the form tc gave them;
// unchanged when a Value cannot take them.
func callArgs(tc ToolCall, masked string) CallArgs {
	if tc.Args != "" {
		return CallArgs{Args: masked, Changed: true}
	}
	v, err := fromInputJSON(tc.Value, []byte(masked))
	if err != nil {
		return CallArgs{}
	}
	return CallArgs{Value: v, Changed: true}
}
