package workload

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/readtools"
)

// turn is one tool turn of the replayed session.
type turn struct {
	tool, id  string
	content   string // the result as the tool returned it
	offloaded string // what offload left in the conversation
	stored    bool   // offloaded is a notice
	span             // the conversation before the result
}

// span is what a conversation holds and does between two tool results:
// other text (pre bytes) and calls model calls, the last of which issues
// the next call with an assistant message of assistant bytes.
type span struct {
	pre, assistant int64
	calls          int
}

// hmsg weighs one message of the history; tool marks a tool result.
type hmsg struct {
	bytes, tokens int64
	tool          bool
}

// sized weighs a message known only by its size: tokens by the bytes/4
// estimate.
func sized(n int64) hmsg { return hmsg{bytes: n, tokens: n / 4} }

// replay is one strategy's conversation: message 0 is the prompt, then each
// turn adds its span's other text (when there is some), the model's call
// and the tool's result (message at[i]).
type replay struct {
	name      string
	opts      HistoryOptions
	tk        hybridctx.Tokenizer
	turns     []turn
	compactor *hybridctx.Compactor
	prompt    int64
	final     span // after the last result (its assistant bytes are never sent)

	texts   []string // each result's text now
	masked  []bool
	at      []int // the message index of each result
	msgs    []hmsg
	first   int // the first message changed since the last model call
	prevLen int // messages the last model call sent
	steps   []time.Duration
	peakTok int64 // the largest history a call sent, in tokens (estimated without a tokenizer)
	s       *BudgetStrategy
}

func lossy(name string) bool { return name == StrategyKeepLastK || name == StrategyClearTrigger }

// run replays every turn and prices every model call.
func (r *replay) run(ctx context.Context) (*BudgetStrategy, error) {
	s := &BudgetStrategy{Name: r.name, Lossless: !lossy(r.name)}
	r.msgs = []hmsg{sized(r.prompt)}
	r.first = len(r.msgs)
	for i, t := range r.turns {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.span(s, t.span)
		text := t.offloaded
		if r.name == StrategyInline {
			text = t.content
		}
		res := r.weigh(text)
		res.tool = true
		r.msgs = append(r.msgs, sized(t.assistant))
		r.at = append(r.at, len(r.msgs))
		r.msgs = append(r.msgs, res)
		r.texts = append(r.texts, text)
		r.masked = append(r.masked, false)
		if err := r.apply(ctx, s, i); err != nil {
			return nil, err
		}
	}
	r.span(s, r.final)
	return s, nil
}

// span prices a span's model calls: all but the last see the history as
// it stands, the last one the span's other text too (a trajectory records
// that text only as one size).
func (r *replay) span(s *BudgetStrategy, sp span) {
	for k := 1; k < sp.calls; k++ {
		r.call(s)
	}
	if sp.pre > 0 {
		r.msgs = append(r.msgs, sized(sp.pre))
	}
	if sp.calls > 0 {
		r.call(s)
	}
}

func (r *replay) weigh(text string) hmsg {
	m := hmsg{bytes: int64(len(text))}
	if r.tk != nil {
		m.tokens = r.tk.CountTokens(text)
	} else {
		m.tokens = hybridctx.EstimateTokens{}.CountTokens(text)
	}
	return m
}

// setText replaces result i's text.
func (r *replay) setText(i int, text string) {
	r.texts[i] = text
	r.masked[i] = true
	m := r.weigh(text)
	m.tool = true
	r.msgs[r.at[i]] = m
	r.first = min(r.first, r.at[i])
}

// call prices one model call: the whole history, its unchanged prefix read
// from the cache.
func (r *replay) call(s *BudgetStrategy) {
	var total, tokens, tool, cached, cachedTok int64
	keep := min(r.first, r.prevLen)
	for k, m := range r.msgs {
		total += m.bytes
		tokens += m.tokens
		if m.tool {
			tool += m.bytes
		}
		if k < keep {
			cached += m.bytes
			cachedTok += m.tokens
		}
	}
	if r.first < r.prevLen {
		s.Invalidations++
		for _, m := range r.msgs[r.first:r.prevLen] {
			s.InvalidatedBytes += m.bytes
		}
	}
	s.InputBytes += total
	s.PeakBytes = max(s.PeakBytes, total)
	s.PeakToolBytes = max(s.PeakToolBytes, tool)
	r.peakTok = max(r.peakTok, tokens)
	if r.tk != nil {
		s.PeakTokens = max(s.PeakTokens, tokens)
		s.CacheWeighted += CacheRead*float64(cachedTok) + CacheWrite*float64(tokens-cachedTok)
	} else {
		s.CacheWeighted += CacheRead*float64(cached) + CacheWrite*float64(total-cached)
	}
	r.prevLen, r.first = len(r.msgs), len(r.msgs)
}

// toolWeight is the tool content against the budget: tokens with a
// tokenizer, else bytes.
func (r *replay) toolWeight() int64 {
	var n int64
	for _, k := range r.at {
		if r.tk != nil {
			n += r.msgs[k].tokens
		} else {
			n += r.msgs[k].bytes
		}
	}
	return n
}

// apply runs the strategy's rule after turn i's result arrived.
func (r *replay) apply(ctx context.Context, s *BudgetStrategy, i int) error {
	n := i + 1
	keep := hybridctx.HistoryPolicy{KeepRecent: r.opts.KeepRecent}.Recent() // a negative KeepRecent keeps none
	cleared := 0
	switch r.name {
	case StrategyMaskEveryTurn, StrategyWatermark:
		return r.compact(ctx, s, n)
	case StrategyKeepLastK:
		for k := 0; k < n-keep; k++ {
			if !r.masked[k] {
				r.setText(k, clearedText)
				cleared++
			}
		}
	case StrategyClearTrigger:
		w := r.toolWeight()
		if w <= r.opts.Budget {
			return nil
		}
		for k := 0; k < n-keep && w > r.opts.LowWater; k++ {
			if r.masked[k] {
				continue
			}
			before := r.msgs[r.at[k]]
			r.setText(k, clearedText)
			after := r.msgs[r.at[k]]
			if r.tk != nil {
				w -= before.tokens - after.tokens
			} else {
				w -= before.bytes - after.bytes
			}
			cleared++
		}
	}
	if cleared > 0 {
		s.Compactions++
		s.Masked += cleared
	}
	return nil
}

// compact runs the compactor over the first n results.
func (r *replay) compact(ctx context.Context, s *BudgetStrategy, n int) error {
	calls := make([]string, n)
	rs := make([]hybridctx.HistoryResult, n)
	for k := range n {
		t := r.turns[k]
		calls[k] = t.id
		form := hybridctx.FormInline
		if r.masked[k] || t.stored {
			form = hybridctx.FormNotice
		}
		rs[k] = hybridctx.HistoryResult{Call: hybridctx.Call{Tool: t.tool, ID: t.id}, Text: r.texts[k], Form: form, Ordered: true, CallsBefore: k + 1}
	}
	start := time.Now()
	c, err := r.compactor.Compact(ctx, calls, rs)
	if err != nil {
		return err
	}
	if c.Stepped {
		r.steps = append(r.steps, time.Since(start))
	}
	if c.Failed > 0 {
		return fmt.Errorf("%d results could not be masked", c.Failed)
	}
	if c.Masked > 0 {
		s.Compactions++
		s.Masked += c.Masked
	}
	for k, res := range c.Results {
		if res.Masked {
			r.setText(k, res.Text)
		}
	}
	return nil
}

// readBack reads every masked result back through the read tool by its
// mask, and, with a set, asks one question about each through the read
// tools.
func (r *replay) readBack(ctx context.Context, reh *hybridctx.Rehydrator, set *readtools.Set, s *BudgetStrategy) error {
	q := &QuestionReport{}
	for k, m := range r.masked {
		if !m {
			continue
		}
		st, ok := hybridctx.ParseStoredText(r.texts[k])
		if !ok {
			continue
		}
		req := hybridctx.Request{Reference: st.Ref.String(), Budget: st.Size + 1}
		if st.Offset >= 0 {
			req.Offset, req.Length = st.Offset, st.Size
		}
		got, err := reh.Rehydrate(ctx, req)
		if err != nil {
			return err
		}
		if got.Outcome() == hybridctx.Resolved && string(got.Segment.Bytes()) == r.turns[k].content {
			s.ReadBackExact++
		}
		if set == nil {
			continue
		}
		asked, err := ask(ctx, set, []byte(r.turns[k].content), QuestionOptions{MaxBytes: 4096}, q)
		if err != nil {
			return err
		}
		if asked {
			q.Questions++
		}
	}
	q.Tools.finish()
	s.Questions = BudgetQuestions{Count: q.Questions, CallsP95: q.Tools.Calls.P95, BytesP95: q.Tools.Bytes.P95, Exact: q.Tools.Exact}
	return nil
}

// stepP99 returns the 99th percentile of the compaction steps' time.
func (r *replay) stepP99() time.Duration {
	if len(r.steps) == 0 {
		return 0
	}
	s := slices.Clone(r.steps)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*99/100)]
}
