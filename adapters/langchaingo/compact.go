package langchaingo

import (
	"context"

	"github.com/tmc/langchaingo/llms"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/readtools"
)

// Compact applies the history budget of off's policy (see docs/history.md)
// to msgs, one call before each model call (llms.Model.GenerateContent):
// while the tool responses' content is within the budget it returns msgs as
// they are; once over it, older llms.ToolCallResponse parts get their
// mask as Content (at most hybridctx.MaxMaskLen bytes, resolved by the read
// tools), down to the low water mark, in one step. With the policy's
// HistoryPolicy.MaskInputs, the long strings of each answered
// llms.ToolCall's FunctionCall.Arguments are masked too (docs/history.md,
// "Tool inputs"), the arguments still JSON of the same shape. Roles, parts,
// tool call ids and names stay, and every response still answers its call.
// msgs itself is never modified; the returned slice shares the messages
// that did not change. opts names the read tools (their answers are never
// masked) as for NewReadTools; nil means the names of off's policy.
//
// The error wraps hybridctx.ErrInvalidHistory for a response without its
// call, two for one call or a call without its response, or is the
// context's; msgs is then returned unchanged.
//
// Compact builds its compactor anew; a loop that compacts before every
// model call keeps one Compactor instead, so the token counts of messages
// it saw are not counted again.
func Compact(ctx context.Context, off *hybridctx.Offloader, msgs []llms.MessageContent, opts *Options) ([]llms.MessageContent, error) {
	return NewCompactor(off, opts).Compact(ctx, msgs)
}

// Compactor is Compact for one Offloader and Options, kept across model
// calls. It is safe for concurrent use.
type Compactor struct {
	c      *hybridctx.Compactor
	isRead func(string) bool
}

// NewCompactor returns the Compactor of off under opts (nil: defaults).
func NewCompactor(off *hybridctx.Offloader, opts *Options) *Compactor {
	var names readtools.Names
	var obs hybridctx.CompactionObserver
	if opts != nil {
		names, obs = opts.Names, opts.Compaction
	}
	return &Compactor{c: adaptkit.NewCompactor(off, obs), isRead: readtools.NamesOf(names.Over(off.Policy())).Has}
}

// Compact is the package's Compact with c's compactor.
func (c *Compactor) Compact(ctx context.Context, msgs []llms.MessageContent) ([]llms.MessageContent, error) {
	var calls []adaptkit.ToolCall
	var results []adaptkit.ToolText
	var at, callAt [][2]int // message and part of each result, of each call
	for i, m := range msgs {
		for j, p := range m.Parts {
			switch v := p.(type) {
			case llms.ToolCall:
				var name, args string
				if v.FunctionCall != nil {
					name, args = v.FunctionCall.Name, v.FunctionCall.Arguments
				}
				calls = append(calls, adaptkit.ToolCall{ID: v.ID, Tool: name, Args: args})
				callAt = append(callAt, [2]int{i, j})
			case llms.ToolCallResponse:
				results = append(results, adaptkit.ToolText{CallsBefore: len(calls), CallID: v.ToolCallID, Text: v.Content})
				at = append(at, [2]int{i, j})
			}
		}
	}
	res, err := adaptkit.CompactTexts(ctx, c.c, c.isRead, calls, results)
	if err != nil || res == nil {
		return msgs, err
	}
	out := append([]llms.MessageContent(nil), msgs...)
	copied := map[int]bool{}
	parts := func(i int) []llms.ContentPart {
		if !copied[i] {
			out[i].Parts = append([]llms.ContentPart(nil), out[i].Parts...)
			copied[i] = true
		}
		return out[i].Parts
	}
	for k, c := range res.Changed {
		if c {
			ps := parts(at[k][0])
			r := ps[at[k][1]].(llms.ToolCallResponse)
			r.Content = res.Texts[k]
			ps[at[k][1]] = r
		}
	}
	for k, a := range res.Calls {
		if a.Changed {
			ps := parts(callAt[k][0])
			tc := ps[callAt[k][1]].(llms.ToolCall)
			fc := *tc.FunctionCall
			fc.Arguments = a.Args
			tc.FunctionCall = &fc
			ps[callAt[k][1]] = tc
		}
	}
	return out, nil
}
