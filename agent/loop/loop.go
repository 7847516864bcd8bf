package loop

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
)

// Model is the pluggable brain of a Loop: given the conversation so far and
// the tools it may call, it returns either tool calls or a final answer.
type Model interface {
	Next(ctx context.Context, history []Message, tools []agent.ToolSpec) (Reply, error)
}

// Reply is one model turn. A reply without tool calls is the final answer.
type Reply struct {
	Content   string
	ToolCalls []ToolCall
}

// DefaultMaxTurns bounds a Loop's model turns unless Config sets another.
const DefaultMaxTurns = 64

// Config configures a Loop.
type Config struct {
	// Model decides each turn. Required.
	Model Model
	// Middleware decides every tool result with the host's binding and
	// policy. Required.
	Middleware *agent.Middleware
	// Tools are the tools the model may call, besides the read tool.
	Tools []agent.Tool
	// ReadTool, when set, is offered to the model as well.
	ReadTool *agent.ReadTool
	// MaxTurns bounds the model turns of one Run; 0 means DefaultMaxTurns.
	MaxTurns int
	// Compaction, when the middleware's policy has a history budget, is
	// told of each compaction step (sink.Summary counts them). Optional.
	Compaction hybridctx.CompactionObserver
}

// Errors of NewLoop and Run.
var (
	ErrInvalidConfig = errors.New("agent: invalid loop config")
	// ErrMaxTurns means the model had not answered after MaxTurns turns.
	ErrMaxTurns = errors.New("agent: too many turns without a final answer")
	// ErrModel wraps the error a Model returned.
	ErrModel = errors.New("agent: model failed")
)

// Loop runs one agent: ask the model, run the tools it calls through the
// middleware, append everything to the history, repeat until a final answer.
// A Loop is safe for concurrent use on different histories.
type Loop struct {
	model    Model
	mw       *agent.Middleware
	tools    map[string]agent.ToolFunc
	specs    []agent.ToolSpec
	maxTurns int
	compact  *hybridctx.Compactor // nil without a history budget
}

// NewLoop validates cfg and returns a Loop.
func NewLoop(cfg Config) (*Loop, error) {
	if cfg.Model == nil || cfg.Middleware == nil {
		return nil, fmt.Errorf("%w: model and middleware are required", ErrInvalidConfig)
	}
	if cfg.MaxTurns < 0 {
		return nil, fmt.Errorf("%w: max turns must be >= 0", ErrInvalidConfig)
	}
	l := &Loop{model: cfg.Model, mw: cfg.Middleware, tools: map[string]agent.ToolFunc{}, maxTurns: cfg.MaxTurns}
	if l.maxTurns == 0 {
		l.maxTurns = DefaultMaxTurns
	}
	if off := cfg.Middleware.Offloader(); off.Policy().History.Enabled() {
		l.compact, _ = hybridctx.NewCompactor(off, &hybridctx.CompactorOptions{Observer: cfg.Compaction})
	}
	all := cfg.Tools
	if cfg.ReadTool != nil {
		all = append(append([]agent.Tool(nil), all...), cfg.ReadTool.Tool())
	}
	for _, t := range all {
		switch {
		case t.Spec.Name == "" || t.Func == nil:
			return nil, fmt.Errorf("%w: every tool needs a name and a body", ErrInvalidConfig)
		case l.tools[t.Spec.Name] != nil:
			return nil, fmt.Errorf("%w: two tools named %q", ErrInvalidConfig, t.Spec.Name)
		}
		l.tools[t.Spec.Name] = t.Func
		l.specs = append(l.specs, t.Spec)
	}
	return l, nil
}

// Tools returns the specs offered to the model.
func (l *Loop) Tools() []agent.ToolSpec { return append([]agent.ToolSpec(nil), l.specs...) }

// Result summarizes one Run.
type Result struct {
	// Final is the model's final answer.
	Final string
	// Turns counts model turns; Calls counts tool calls.
	Turns, Calls int
}

// Run continues the conversation in h until the model answers without tool
// calls. Each tool call is answered by exactly one tool message: the
// middleware's decision (Offload.Text), or for a failed tool its error text
// cut to max(threshold, hybridctx.MaxNoticeLen) bytes, so h keeps its
// invariant (History.Verify). h's threshold must be at
// least the policy's inline threshold.
//
// When the policy has a history budget, the history compacts itself before
// each model call (see docs/history.md): older tool messages over the
// budget are masked in one step, losslessly.
//
// Run returns the context's error when it is cancelled, an error wrapping
// ErrModel when the model fails, an error wrapping
// hybridctx.ErrInvalidHistory when h's tool messages do not pair with its
// calls (under a history budget), and ErrMaxTurns when the turns run out; h
// keeps every message appended until then.
func (l *Loop) Run(ctx context.Context, h *History) (*Result, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil history", ErrInvalidConfig)
	}
	if h.threshold < l.mw.Offloader().Policy().InlineThreshold {
		return nil, fmt.Errorf("%w: history threshold %d below the policy's %d", ErrInvalidConfig,
			h.threshold, l.mw.Offloader().Policy().InlineThreshold)
	}
	ids := map[string]bool{}
	for _, m := range h.msgs {
		for _, c := range m.ToolCalls {
			ids[c.ID] = true
		}
	}
	res := &Result{}
	for res.Turns < l.maxTurns {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if l.compact != nil {
			if err := h.compact(ctx, l.compact); err != nil {
				return res, err
			}
		}
		reply, err := l.model.Next(ctx, h.Messages(), l.Tools())
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, fmt.Errorf("%w: %w", ErrModel, err)
		}
		res.Turns++
		calls := make([]ToolCall, len(reply.ToolCalls))
		for i, c := range reply.ToolCalls {
			if c.ID == "" || ids[c.ID] {
				c.ID = freshID(ids, len(h.msgs), i)
			}
			ids[c.ID] = true
			calls[i] = c
		}
		h.Append(Message{Role: RoleAssistant, Content: reply.Content, ToolCalls: calls})
		if len(calls) == 0 {
			res.Final = reply.Content
			return res, nil
		}
		for _, c := range calls {
			m, err := l.call(ctx, h.threshold, c)
			if err != nil {
				return res, err
			}
			res.Calls++
			h.Append(m)
		}
	}
	return res, ErrMaxTurns
}

// freshID returns a call id not yet used in the history.
func freshID(used map[string]bool, at, i int) string {
	for n := 0; ; n++ {
		id := "call_" + strconv.Itoa(at) + "_" + strconv.Itoa(i)
		if n > 0 {
			id += "_" + strconv.Itoa(n)
		}
		if !used[id] {
			return id
		}
	}
}

// call runs one tool call and returns the tool message answering it. The
// error is non-nil only when the run must stop (a cancelled context).
func (l *Loop) call(ctx context.Context, threshold int64, c ToolCall) (Message, error) {
	m := Message{Role: RoleTool, ToolCallID: c.ID, ToolName: c.Name}
	errLimit := max(threshold, hybridctx.MaxNoticeLen)
	fn := l.tools[c.Name]
	if fn == nil {
		m.IsError = true
		m.Content = bound("hybridctx: unknown tool "+quoteShort(c.Name)+"; call one of the tools offered", errLimit)
		return m, nil
	}
	out, err := l.mw.Call(ctx, hybridctx.Call{Tool: c.Name, ID: c.ID}, fn, c.Arguments)
	switch {
	case err == nil:
		m.Offload = out
		m.Content = out.Text()
		m.IsError = out.Outcome() == hybridctx.Failed || out.Outcome() == hybridctx.RecoveryRequired
		return m, nil
	case ctx.Err() != nil:
		return m, ctx.Err()
	case errors.Is(err, agent.ErrToolFailed):
		m.IsError = true
		m.Content = bound(toolErrorText(err), errLimit)
		return m, nil
	case errors.Is(err, hybridctx.ErrInvalidCall):
		m.IsError = true
		m.Content = bound("hybridctx: the tool call was not run: "+err.Error(), errLimit)
		return m, nil
	case errors.Is(err, hybridctx.ErrUnserializable):
		m.IsError = true
		m.Content = bound("hybridctx: the tool's result could not be encoded as JSON", errLimit)
		return m, nil
	case errors.Is(err, hybridctx.ErrSource):
		m.IsError = true
		m.Content = bound("tool error: reading the tool's streamed result failed", errLimit)
		return m, nil
	}
	return m, err
}

// toolErrorText is what the model sees of a failed tool: the read tool's
// categorical texts as they are, any other tool's error text after
// "tool error: ".
func toolErrorText(err error) string {
	e := unwrapTool(err)
	if errors.Is(e, agent.ErrReadRefused) || errors.Is(e, agent.ErrInvalidArguments) || errors.Is(e, agent.ErrReadFailed) {
		return e.Error()
	}
	return "tool error: " + e.Error()
}

// unwrapTool strips the middleware's ErrToolFailed wrapper.
func unwrapTool(err error) error {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range u.Unwrap() {
			if e != agent.ErrToolFailed {
				return e
			}
		}
	}
	return err
}

// bound cuts s to at most n bytes on a rune boundary.
func bound(s string, n int64) string {
	if int64(len(s)) <= n {
		return s
	}
	return artifact.TruncateUTF8(s, int(n))
}

// quoteShort quotes at most 32 bytes of a name the model chose, cut on a
// rune boundary.
func quoteShort(s string) string {
	if len(s) <= 32 {
		return strconv.Quote(s)
	}
	s = s[:32]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return strconv.Quote(s) + "…"
}
