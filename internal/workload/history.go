package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/readtools"
	"github.com/hybridctx/hybridctx/workspace"
)

// The history-budget benchmark (see docs/history.md): one long session
// replayed turn by turn, one tool result per turn, under each strategy a
// conversation can follow; every model call sends the whole history, and a
// prompt-cache model prices it.

// Defaults of HistoryOptions.
const (
	DefaultHistoryTurns  = 500
	DefaultHistoryBudget = 32768
	DefaultHistoryLow    = 16384
	DefaultKeepRecent    = 3
)

// The cache model: a byte (or token) sent for the first time, or again
// after an invalidation, costs CacheWrite; one of a cached prefix costs
// CacheRead.
const (
	CacheWrite = 1.25
	CacheRead  = 0.1
)

// promptBytes stands for the system prompt and tool definitions every
// model call sends first.
const promptBytes = 1024

// clearedText is what the lossy strategies leave of a cleared result.
const clearedText = "[tool result cleared]"

// The strategies, in report order.
const (
	StrategyInline        = "inline"
	StrategyOffload       = "offload"
	StrategyMaskEveryTurn = "mask_every_turn"
	StrategyWatermark     = "watermark"
	StrategyKeepLastK     = "keep_last_k"
	StrategyClearTrigger  = "clear_at_trigger"
)

// HistoryOptions configure RunHistory.
type HistoryOptions struct {
	// Turns is the number of tool turns replayed (the session's results in
	// order, from its start again when it has fewer); 0 means
	// DefaultHistoryTurns.
	Turns int
	// Threshold is the inline threshold; 0 means DefaultThreshold.
	Threshold int64
	// Budget, LowWater and KeepRecent set the history budget (bytes, or
	// tokens with a Tokenizer); 0 means the defaults. The lossy strategies
	// use them too: keep_last_k keeps KeepRecent results, clear_at_trigger
	// clears from Budget down to LowWater.
	Budget, LowWater int64
	KeepRecent       int
	// Tokenizer, when set, weighs the history in tokens as well, and the
	// budget is in tokens.
	Tokenizer hybridctx.Tokenizer
	// User and Workflow are the owner (with the session's name).
	User, Workflow string
}

// BudgetReport is the outcome of RunHistory.
type BudgetReport struct {
	Turns      int               `json:"turns"`
	Session    string            `json:"-"`
	Tokenizer  string            `json:"tokenizer,omitempty"`
	Strategies []*BudgetStrategy `json:"strategies"`
}

// BudgetStrategy is what one strategy cost over the run.
type BudgetStrategy struct {
	Name string `json:"name"`
	// Lossless is false for the strategies that clear results: their
	// cleared results can never be read back, nor asked about.
	Lossless bool `json:"lossless"`
	// PeakBytes is the largest history a model call sent; PeakToolBytes
	// the largest tool content; PeakTokens the largest history in tokens
	// (with a tokenizer).
	PeakBytes     int64 `json:"peak_bytes"`
	PeakToolBytes int64 `json:"peak_tool_bytes"`
	PeakTokens    int64 `json:"peak_tokens,omitempty"`
	// InputBytes sums every model call's input; CacheWeighted prices it
	// with the cache model (bytes, or tokens with a tokenizer).
	InputBytes    int64   `json:"input_bytes"`
	CacheWeighted float64 `json:"cache_weighted"`
	// Invalidations counts model calls whose cached prefix a change cut;
	// InvalidatedBytes sums the bytes such calls sent again at the write
	// price that the previous call had sent (a change near the end of the
	// history invalidates little).
	Invalidations    int   `json:"invalidations"`
	InvalidatedBytes int64 `json:"invalidated_bytes"`
	// Compactions counts the steps that changed the history.
	Compactions int `json:"compactions"`
	// Masked counts results masked (lossless) or cleared (lossy).
	Masked int `json:"masked"`
	// ReadBackExact counts masked results whose mask reads back, through
	// the read tool, exactly their bytes.
	ReadBackExact int `json:"read_back_exact"`
	// Questions: one per masked result with a question, answered through
	// the read tools.
	Questions BudgetQuestions `json:"questions"`
	// CompactionP99Micros is the 99th percentile of a compaction step's
	// time, the offloads it made included (the compacting strategies).
	CompactionP99Micros float64 `json:"compaction_p99_us,omitempty"`
}

// BudgetQuestions sums the questions asked about masked results.
type BudgetQuestions struct {
	Count    int   `json:"count"`
	CallsP95 int64 `json:"calls_p95"`
	BytesP95 int64 `json:"bytes_p95"`
	Exact    int   `json:"exact"`
}

// ErrEmptySession means the workload had no result to replay.
var ErrEmptySession = errors.New("workload: no tool result to replay")

// RunHistory replays the first session of src for opts.Turns turns under
// every strategy, against store.
func RunHistory(ctx context.Context, src Source, store *workspace.Store, opts HistoryOptions) (*BudgetReport, error) {
	opts = historyDefaults(opts)
	items, session, err := firstSession(src)
	if err != nil {
		return nil, err
	}
	owner := artifact.Owner{User: opts.User, Workflow: opts.Workflow, Session: session}
	bind, err := hybridctx.NewBinding(owner, store)
	if err != nil {
		return nil, err
	}
	base := hybridctx.Policy{InlineThreshold: opts.Threshold, Tokenizer: opts.Tokenizer}
	off, err := hybridctx.NewOffloader(bind, base, nil)
	if err != nil {
		return nil, err
	}
	reh, err := hybridctx.NewRehydrator(bind, nil)
	if err != nil {
		return nil, err
	}
	set, err := readtools.New(reh, nil)
	if err != nil {
		return nil, err
	}
	turns := make([]turn, opts.Turns)
	for i := range turns {
		it := items[i%len(items)]
		id := "call_" + strconv.Itoa(i)
		d, err := off.Offload(ctx, hybridctx.Call{Tool: it.Tool, ID: id}, it.Content)
		if err != nil {
			return nil, err
		}
		call := int64(len(it.Tool) + len(id) + 64) // the call message: name, id, arguments
		turns[i] = turn{tool: it.Tool, id: id, content: string(it.Content), offloaded: d.Text(), stored: d.Outcome() != hybridctx.Inline,
			span: span{assistant: call, calls: 1}}
	}
	rep := &BudgetReport{Turns: opts.Turns, Session: session}
	if opts.Tokenizer != nil {
		rep.Tokenizer = opts.Tokenizer.Name()
	}
	sess := &conversation{bind: bind, base: base, opts: opts, reh: reh, set: set, turns: turns, prompt: promptBytes, final: span{calls: 1}}
	rs, err := sess.replayAll(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		rep.Strategies = append(rep.Strategies, r.s)
	}
	return rep, nil
}

// strategies is every strategy, in report order.
var strategies = []string{StrategyInline, StrategyOffload, StrategyMaskEveryTurn, StrategyWatermark, StrategyKeepLastK, StrategyClearTrigger}

// conversation is one conversation to replay under every strategy: its turns,
// already offloaded once under base, and the owner they were stored for.
type conversation struct {
	bind   *hybridctx.Binding
	base   hybridctx.Policy
	opts   HistoryOptions
	reh    *hybridctx.Rehydrator
	set    *readtools.Set // nil: no questions asked
	turns  []turn
	prompt int64
	final  span
}

// replayAll replays the session under every strategy and reads back what
// the lossless ones masked.
func (ss *conversation) replayAll(ctx context.Context) ([]*replay, error) {
	var out []*replay
	for _, name := range strategies {
		r := &replay{name: name, opts: ss.opts, tk: ss.opts.Tokenizer, turns: ss.turns, prompt: ss.prompt, final: ss.final}
		switch name {
		case StrategyMaskEveryTurn, StrategyWatermark:
			h := hybridctx.HistoryPolicy{Budget: ss.opts.Budget, LowWater: ss.opts.LowWater, KeepRecent: ss.opts.KeepRecent}
			if name == StrategyMaskEveryTurn {
				h.LowWater = ss.opts.Budget
			}
			p := ss.base
			p.History = h
			o, err := hybridctx.NewOffloader(ss.bind, p, nil)
			if err != nil {
				return nil, err
			}
			if r.compactor, err = hybridctx.NewCompactor(o, nil); err != nil {
				return nil, err
			}
		}
		s, err := r.run(ctx)
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", name, err)
		}
		s.CompactionP99Micros = float64(r.stepP99().Nanoseconds()) / 1e3
		if s.Lossless && s.Masked > 0 {
			if err := r.readBack(ctx, ss.reh, ss.set, s); err != nil {
				return nil, fmt.Errorf("history %s: %w", name, err)
			}
		}
		r.s = s
		out = append(out, r)
	}
	return out, nil
}

func historyDefaults(o HistoryOptions) HistoryOptions {
	if o.Turns <= 0 {
		o.Turns = DefaultHistoryTurns
	}
	if o.Threshold <= 0 {
		o.Threshold = DefaultThreshold
	}
	if o.Budget <= 0 {
		o.Budget = DefaultHistoryBudget
	}
	if o.LowWater <= 0 {
		o.LowWater = min(DefaultHistoryLow, o.Budget/2)
	}
	if o.KeepRecent == 0 {
		o.KeepRecent = DefaultKeepRecent
	}
	if o.User == "" {
		o.User = DefaultUser
	}
	if o.Workflow == "" {
		o.Workflow = DefaultWorkflow
	}
	return o
}

// firstSession reads the results of src's first session.
func firstSession(src Source) ([]Item, string, error) {
	var items []Item
	var session string
	for {
		it, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", err
		}
		if len(items) == 0 {
			session = it.Session
		}
		if it.Session == session {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return nil, "", ErrEmptySession
	}
	return items, session, nil
}
