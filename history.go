package hybridctx

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"unsafe"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/classify"
)

// ResultForm says what a tool message of a history holds.
type ResultForm uint8

// The three forms of a tool message.
const (
	// FormInline is a tool result as the tool returned it (or any other
	// text a tool message holds, such as a tool error).
	FormInline ResultForm = iota + 1
	// FormNotice is the notice of a stored result, or a mask: a text that
	// reads like one (ParseStoredText). The compactor masks it without
	// storing it only when it is byte for byte the owner's notice, and
	// stores any other text first (docs/history.md, "Notices and masks in
	// a history").
	FormNotice
	// FormRecovered is a recovered segment (a read tool's answer).
	FormRecovered
)

// HistoryResult is one tool message of a history, as the compactor sees
// it.
type HistoryResult struct {
	// Call is the tool call the message answers.
	Call Call
	// Text is the message's content as the model sees it now.
	Text string
	// Form says what Text is.
	Form ResultForm
	// Ref, Offset and Length say where a recovered segment's bytes are in
	// the workspace (RecoveredResult fills them); Length 0 means len(Text).
	Ref            artifact.Ref
	Offset, Length int64
	// Keep marks a result the integration cannot replace (content that is
	// not text, or a read tool's answer whose source it does not know): it
	// counts against the budget but is never masked, like an excluded
	// tool's.
	Keep bool
	// Ordered says that CallsBefore is set: the result comes after exactly
	// the first CallsBefore of the history's calls, and the call it answers
	// must be one of them (a result before its call is a *HistoryError,
	// ProblemResultBeforeCall). Integrations that walk a history in order
	// set both; without Ordered the order is not checked.
	Ordered     bool
	CallsBefore int
	// Input is the arguments of the call the message answers, as JSON
	// (empty when the integration does not pass them). With
	// HistoryPolicy.MaskInputs its long strings are masked, and it weighs
	// against the budget with the result.
	Input string
}

// RecoveredResult returns the history entry of a tool message holding the
// bytes of seg (the read tool's answer to call): its mask points to the
// range of the body seg holds (Segment.Range).
func RecoveredResult(call Call, seg *Segment) HistoryResult {
	off, n := seg.Range()
	return HistoryResult{Call: call, Text: string(seg.Bytes()), Form: FormRecovered, Ref: seg.Ref(), Offset: off, Length: n}
}

// CompactedResult is what one tool message becomes.
type CompactedResult struct {
	// Text is the message's new content: the input's, or its mask.
	Text string
	// Form is FormNotice for a masked message, else the input's.
	Form ResultForm
	// Masked is true when this compaction masked the message.
	Masked bool
	// Decision is the offload decision that masked an inline result or a
	// recovered segment (its event was reported); nil otherwise.
	Decision *OffloadResult
	// Failed is true when masking the message failed: it stays as it was.
	Failed bool
	// Input is the call's new arguments: the input's, or with its long
	// strings masked. InputDecisions are the decisions that stored them.
	Input          string
	InputDecisions []*OffloadResult
}

// Shortfall says why a history is still over its budget after a step.
type Shortfall uint8

// The reasons a step can fall short of the budget.
const (
	// ShortKeepRecent: the most recent results, which are never masked,
	// hold more than the budget on their own.
	ShortKeepRecent Shortfall = iota + 1
	// ShortExcluded: the results of excluded tools hold too much.
	ShortExcluded
	// ShortOffloadFailed: storing a result failed; it stayed inline.
	ShortOffloadFailed
	// ShortMasks: every result that could be masked is, and the masks
	// (at least a reference each) with the results too small to mask hold
	// more than the budget: a budget too small for the number of results.
	ShortMasks
)

var shortfallNames = [...]string{ShortKeepRecent: "keep_recent", ShortExcluded: "excluded_tools",
	ShortOffloadFailed: "offload_failed", ShortMasks: "masks_over_budget"}

func (s Shortfall) String() string { return name(shortfallNames[:], uint8(s), "shortfall") }

// MarshalText implements encoding.TextMarshaler with the snake_case name.
func (s Shortfall) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// HistorySize is the tool content of a history: bytes, and tokens (the
// policy's Tokenizer, else the bytes/4 estimate).
type HistorySize struct {
	Bytes  int64 `json:"bytes"`
	Tokens int64 `json:"tokens"`
	// InputBytes and InputTokens are the part of Bytes and Tokens that is
	// tool-call inputs (HistoryResult.Input).
	InputBytes  int64 `json:"input_bytes,omitempty"`
	InputTokens int64 `json:"input_tokens,omitempty"`
}

// Compaction is the answer of Compactor.Compact: one CompactedResult per
// input, in order, and what the step did. It holds no content besides the
// results' texts, and its counters none at all.
type Compaction struct {
	Results []CompactedResult
	// Stepped is true when the tool content was over the budget and a
	// step ran (it may still have masked nothing).
	Stepped bool
	// Masked counts the messages this step masked; Failed those whose
	// offload failed (an input string that could not be stored counts
	// too). InputsMasked counts the input strings masked.
	Masked, Failed, InputsMasked int
	// Before and After weigh the tool content.
	Before, After HistorySize
	// OverBudget is true when the tool content is still over the budget
	// after the step; Shortfall says why.
	OverBudget bool
	Shortfall  Shortfall
	// Step is the snapshot the step's history_compaction event carries (the
	// identical instance), or nil when Compact neither stepped nor masked an
	// input, and reported nothing.
	Step *CompactionStep
}

// ErrInvalidHistory is wrapped by *HistoryError.
var ErrInvalidHistory = errors.New("invalid history")

// HistoryError is an argument error of Compact: a history that no model API
// would accept, or an entry that is not what its form says. Nothing changed.
type HistoryError struct {
	// Index is the result's position in the input (or, for a call that
	// was never answered, the call's).
	Index int
	// Problem is a fixed phrase naming the broken rule.
	Problem string
}

// The problems a HistoryError names.
const (
	ProblemResultWithoutCall = "tool result answers no tool call"
	ProblemResultBeforeCall  = "tool result comes before its tool call"
	ProblemTwoResults        = "two tool results answer one call"
	ProblemOpenCall          = "tool call has no result"
	ProblemDuplicateCall     = "two tool calls share an id"
	ProblemNotANotice        = "notice is not a notice of a stored result"
	ProblemBadSource         = "recovered segment has no reference or a negative range"
	ProblemBadForm           = "unknown result form"
)

// Error implements error. It never repeats content, tool names or ids.
func (e *HistoryError) Error() string {
	return fmt.Sprintf("%v: result %d: %s", ErrInvalidHistory, e.Index, e.Problem)
}

// Unwrap returns ErrInvalidHistory.
func (e *HistoryError) Unwrap() error { return ErrInvalidHistory }

// CompactionObserver learns of every compaction step (sink.Summary is
// one), as the step's history_compaction event does. It must be safe for
// concurrent use and must not fail.
type CompactionObserver interface {
	ObserveCompaction(c *Compaction)
}

// CompactorOptions tune a Compactor. Nil means defaults.
type CompactorOptions struct {
	// Observer, when set, is told of every step.
	Observer CompactionObserver
}

// ErrNoHistoryOffloader is returned by NewCompactor for a nil Offloader.
var ErrNoHistoryOffloader = errors.New("compactor needs an offloader")

// Compactor keeps a history within its policy's budget (Policy.History),
// losslessly: it masks tool results to references the read tools resolve. It is framework-neutral: each integration turns its messages
// into HistoryResults and back. Safe for concurrent use.
type Compactor struct {
	off *Offloader
	obs CompactionObserver

	seeds [2]maphash.Seed
	mu    sync.Mutex
	cache textCache // token counts and notice verdicts of texts seen
}

// NewCompactor returns a Compactor masking through off, under off's policy.
func NewCompactor(off *Offloader, opts *CompactorOptions) (*Compactor, error) {
	if off == nil {
		return nil, ErrNoHistoryOffloader
	}
	c := &Compactor{off: off, seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
	if opts != nil {
		c.obs = opts.Observer
	}
	return c, nil
}

// Offloader returns the compactor's offloader.
func (c *Compactor) Offloader() *Offloader { return c.off }

// Compact applies the history budget to the tool results of one history
// (see docs/history.md): nothing changes while their content is at most
// the budget; once over it, maskable results (not among the policy's
// KeepRecent most recent, not of an excluded tool, not masked yet, and
// longer than their mask would be) are masked, newest first, until the
// content is at most the low water mark, in one step. Newest first keeps
// the step's first change, and so the cached prefix it invalidates, as late
// in the history as the step allows (docs/history.md, "Watermarks"). Masking an inline
// result stores it (one offload_decision event, reason history_budget);
// masking a notice only shrinks it (no decision) when it is byte for byte
// the notice the owner's record and body render, and stores it like an
// inline result otherwise; masking a recovered segment points to its
// source and stores nothing (one event, content recovered_context). A result whose offload fails stays as it was and the
// next one is tried.
//
// calls are the ids of every tool call of the history, in order; results
// its tool messages, in order. A history whose results and calls do not pair
// one to one, or with a result placed before its call (HistoryResult.Ordered),
// is a *HistoryError and nothing changes. A cancelled context
// returns its error and the caller keeps its history as it was. Compact is
// deterministic, and a compacted history compacts to itself. A call that
// stepped or masked an input reports exactly one history_compaction event
// through the context's reporter, after the decisions of its masks
// (docs/diagnostics.md); a call that did neither reports none.
func (c *Compactor) Compact(ctx context.Context, calls []string, results []HistoryResult) (*Compaction, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkPairing(calls, results); err != nil {
		return nil, err
	}
	p := c.off.policy
	h := p.History
	c.mu.Lock()
	c.cache.fit(len(results))
	c.mu.Unlock()
	out := &Compaction{Results: make([]CompactedResult, len(results))}
	weights := make([]int64, len(results)) // each result's, its input's included
	var total int64
	for i, r := range results {
		out.Results[i] = CompactedResult{Text: r.Text, Form: r.Form, Input: r.Input}
		b, t := int64(len(r.Text)), c.tokens(r.Text)
		ib, it := int64(len(r.Input)), c.inputTokens(r.Input)
		out.Before.add(b, t, ib, it)
		if h.MaskInputs && r.Input != "" && !h.excluded(r.Call.Tool) {
			in, ds, failed, err := c.maskInput(ctx, r)
			if err != nil && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil {
				failed++
			}
			out.Failed += failed
			out.InputsMasked += len(ds)
			out.Results[i].Input, out.Results[i].InputDecisions = in, ds
			ib, it = int64(len(in)), c.inputTokens(in)
		}
		out.After.add(b, t, ib, it)
		weights[i] = c.weight(b, t) + c.weight(ib, it)
		total += weights[i]
	}
	if !h.Enabled() || total <= h.Budget {
		c.done(ctx, out)
		return out, nil
	}
	out.Stepped = true
	excluded := false
	low, last := h.LowWaterMark(), len(results)-h.Recent()
	for i := last - 1; i >= 0 && total > low; i-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := results[i]
		if r.Keep || h.excluded(r.Call.Tool) {
			excluded = true
			continue
		}
		res, err := c.mask(ctx, r)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil || res.Failed:
			out.Failed++
			out.Results[i].Failed = true
			continue
		case !res.Masked:
			continue
		}
		b, t := int64(len(res.Text)), c.tokens(res.Text)
		in := out.Results[i].Input
		w := c.weight(b, t) + c.weight(int64(len(in)), c.inputTokens(in))
		total += w - weights[i]
		out.After.Bytes += b - int64(len(r.Text))
		out.After.Tokens += t - c.tokens(r.Text)
		res.Input, res.InputDecisions = out.Results[i].Input, out.Results[i].InputDecisions
		out.Results[i] = res
		out.Masked++
	}
	if total > h.Budget {
		out.OverBudget = true
		switch {
		case out.Failed > 0:
			out.Shortfall = ShortOffloadFailed
		case excluded:
			out.Shortfall = ShortExcluded
		case sum(weights[max(0, last):]) > h.Budget:
			out.Shortfall = ShortKeepRecent
		default:
			out.Shortfall = ShortMasks
		}
	}
	c.done(ctx, out)
	return out, nil
}

// done reports a Compact call that stepped or masked an input: exactly one
// history_compaction event (docs/diagnostics.md) and one call of the
// observer; nothing for a call that did neither.
func (c *Compactor) done(ctx context.Context, out *Compaction) {
	out.Step = newCompactionStep(out)
	if out.Step == nil {
		return
	}
	reportCompaction(ctx, c.off.clock, out.Step)
	if c.obs != nil {
		c.obs.ObserveCompaction(out)
	}
}

// add weighs one result (b bytes, t tokens) and its input (ib, it).
func (s *HistorySize) add(b, t, ib, it int64) {
	s.Bytes += b + ib
	s.Tokens += t + it
	s.InputBytes += ib
	s.InputTokens += it
}

func sum(v []int64) int64 {
	var n int64
	for _, x := range v {
		n += x
	}
	return n
}

// weight is what a text counts against the budget: tokens with a
// tokenizer, else bytes.
func (c *Compactor) weight(bytes, tokens int64) int64 {
	if c.off.policy.Tokenizer != nil {
		return tokens
	}
	return bytes
}

// tokens counts text with the policy's tokenizer, remembering the counts of
// the texts it saw (textCache): a history is weighed before every model
// call, and most of it is the same from one call to the next.
func (c *Compactor) tokens(text string) int64 {
	p := c.off.policy
	if p.Tokenizer == nil || len(text) < 64 {
		return p.tokens(text)
	}
	if _, ok := p.Tokenizer.(EstimateTokens); ok {
		return p.tokens(text) // from the length alone
	}
	k := c.key(text)
	c.mu.Lock()
	n := int64(-1)
	if f := c.cache.get(k); f != nil {
		n = f.tokens
	}
	c.mu.Unlock()
	if n >= 0 {
		return n
	}
	n = p.tokens(text)
	c.mu.Lock()
	c.cache.put(k).tokens = n
	c.mu.Unlock()
	return n
}

// inputTokens counts a call's input; most integrations pass none.
func (c *Compactor) inputTokens(in string) int64 {
	if in == "" {
		return 0
	}
	return c.tokens(in)
}

// mask returns what r becomes when masked: Masked false when masking would
// not make it shorter (or it is a mask already), Failed when storing it
// failed. The error is the Offloader's when no decision was made.
func (c *Compactor) mask(ctx context.Context, r HistoryResult) (CompactedResult, error) {
	keep := CompactedResult{Text: r.Text, Form: r.Form}
	p := c.off.forTool(r.Call.Tool).policy
	switch r.Form {
	case FormNotice:
		// Only the notice the owner's record and body render, byte for
		// byte, is masked without being stored (history_notice.go); any
		// other text that reads like a notice or a mask is inline and
		// stored below. A mask needs no check: it is at most MaxMaskLen
		// bytes, and a text that short is never masked, whatever it says.
		st, _ := ParseStoredText(r.Text) // checked by checkPairing
		if m, ok := c.noticeMask(ctx, st, r.Text); ok {
			if len(m) >= len(r.Text) {
				return keep, nil
			}
			return CompactedResult{Text: m, Form: FormNotice, Masked: true}, nil
		}
	case FormRecovered:
		n := r.Length
		if n == 0 {
			n = int64(len(r.Text))
		}
		var cl classify.Classifier
		_, _ = cl.Write([]byte(r.Text[:min(n, int64(len(r.Text)))]))
		m := renderMask(p, r.Ref, n, 0, r.Offset, cl.Kind().String())
		if len(m) >= len(r.Text) {
			return keep, nil
		}
		d, err := c.off.forTool(r.Call.Tool).maskRecovered(ctx, r.Ref, int64(len(r.Text)), m)
		if err != nil {
			return keep, err
		}
		return CompactedResult{Text: m, Form: FormNotice, Masked: true, Decision: d}, nil
	}
	if len(r.Text) <= MaxMaskLen {
		return keep, nil
	}
	d, err := c.off.maskText(ctx, r.Call, r.Text)
	if err != nil {
		return keep, err
	}
	if oc := d.Outcome(); oc != Offloaded && oc != ExistingReference {
		keep.Failed, keep.Decision = true, d
		return keep, nil
	}
	return CompactedResult{Text: d.Notice, Form: FormNotice, Masked: true, Decision: d}, nil
}

// maskText stores an inline result for a history over its budget: step 5
// of docs/offload.md whatever its size, reason history_budget, and the mask
// as its notice. The body is stored as Offload stores it, without what
// only a stored notice shows (its token count and outline).
func (o *Offloader) maskText(ctx context.Context, call Call, text string) (*OffloadResult, error) {
	if err := start(ctx, call); err != nil {
		return nil, err
	}
	o = o.forTool(call.Tool)
	// A read-only view of the string's bytes (see Offload). A copy cost a
	// step that masks 167 stored inline results 32% more CPU and 2.7 times
	// the memory (BENCHMARKS.md, "Speed code and its figures").
	b := unsafe.Slice(unsafe.StringData(text), len(text))
	n := int64(len(b))
	if r := o.unstorable(n); r != 0 {
		return o.failed(ctx, text, b, Failed, r, n)
	}
	st := storing{o: o, call: call, size: n, bytes: b, orig: text}
	var ob observed
	if err := st.digestBytes(ctx, &ob); err != nil {
		return st.abort(err)
	}
	oc, r, err := st.attach(ctx)
	switch {
	case oc == 0:
		return st.abort(err)
	case oc != Offloaded && oc != ExistingReference:
		return st.result(ctx, oc, r)
	}
	st.discard()
	out := &OffloadResult{Ref: st.ref, Notice: renderMask(o.policy, st.ref, n, st.lines, -1, st.kind)}
	return o.finish(ctx, out, oc, HistoryBudget, n)
}

// maskRecovered reports the decision that masks a recovered segment: it
// points to where the bytes came from and stores nothing (content
// recovered_context, existing_reference, history_budget). n is the bytes
// the mask takes out of the conversation, the segment's.
func (o *Offloader) maskRecovered(ctx context.Context, ref artifact.Ref, n int64, mask string) (*OffloadResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &OffloadResult{Ref: ref, Notice: mask}
	if err := initOffloadDiagnostics(&out.diag, ExistingReference, HistoryBudget, n, o.policy.InlineThreshold, ref); err != nil {
		return nil, err
	}
	out.diag.content = RecoveredContext
	report(ctx, o.clock, &out.diag)
	return out, nil
}

// checkPairing checks that calls and results pair one to one and that each
// result is what its form says.
func checkPairing(calls []string, results []HistoryResult) error {
	ids := make(map[string]int, len(calls)) // id → index of its call
	for i, id := range calls {
		if _, dup := ids[id]; dup {
			return &HistoryError{Index: i, Problem: ProblemDuplicateCall}
		}
		ids[id] = i
	}
	answered := make(map[string]bool, len(results))
	for i, r := range results {
		at, ok := ids[r.Call.ID]
		if !ok {
			return &HistoryError{Index: i, Problem: ProblemResultWithoutCall}
		}
		if r.Ordered && at >= r.CallsBefore {
			return &HistoryError{Index: i, Problem: ProblemResultBeforeCall}
		}
		if answered[r.Call.ID] {
			return &HistoryError{Index: i, Problem: ProblemTwoResults}
		}
		answered[r.Call.ID] = true
		switch r.Form {
		case FormInline:
		case FormNotice:
			if _, ok := ParseStoredText(r.Text); !ok {
				return &HistoryError{Index: i, Problem: ProblemNotANotice}
			}
		case FormRecovered:
			if r.Ref.IsZero() || r.Offset < 0 || r.Length < 0 {
				return &HistoryError{Index: i, Problem: ProblemBadSource}
			}
		default:
			return &HistoryError{Index: i, Problem: ProblemBadForm}
		}
	}
	for i, id := range calls {
		if !answered[id] {
			return &HistoryError{Index: i, Problem: ProblemOpenCall}
		}
	}
	return nil
}
