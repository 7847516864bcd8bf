package loop

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hybridctx/hybridctx"
)

// Role is the author of a message.
type Role string

// The four roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one tool invocation the model asked for.
type ToolCall struct {
	// ID pairs the call with the tool message that answers it.
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Message is one entry of a conversation.
type Message struct {
	Role    Role
	Content string
	// ToolCalls are the calls of an assistant message.
	ToolCalls []ToolCall
	// ToolCallID and ToolName say which call a tool message answers.
	ToolCallID string
	ToolName   string
	// IsError marks a tool message that reports a failure: the tool's own
	// error, or a categorical failed/recovery_required notice.
	IsError bool
	// Offload is the decision behind a tool message's content; nil for a
	// tool error and for the other roles. For a masked message it is the
	// masking decision, or the original one when only a notice shrank.
	Offload *hybridctx.OffloadResult
	// Masked marks a tool message the history budget replaced by its mask
	// (see docs/history.md).
	Masked bool
}

// ErrInvariant is wrapped by *InvariantError.
var ErrInvariant = errors.New("history invariant violated")

// InvariantError names the first message that breaks the history's
// invariant.
type InvariantError struct {
	// Index is the message's position in the history.
	Index int
	// Problem is a fixed phrase naming the broken rule.
	Problem string
	// Bytes is the message's content size; Threshold the history's. For
	// ProblemOverBudget they are the tool content and the budget (tokens
	// when the policy has a tokenizer).
	Bytes, Threshold int64
	// Shortfall says, for ProblemOverBudget, why the last compaction could
	// not bring the history within its budget (0 when it did, and results
	// arrived since).
	Shortfall hybridctx.Shortfall
}

// Error implements error. It never repeats message content.
func (e *InvariantError) Error() string {
	return fmt.Sprintf("%v: message %d: %s (%d bytes, threshold %d)%s", ErrInvariant, e.Index, e.Problem, e.Bytes, e.Threshold, shortfallText(e.Shortfall))
}

// Unwrap returns ErrInvariant.
func (e *InvariantError) Unwrap() error { return ErrInvariant }

// The rules Verify checks.
const (
	ProblemOversized     = "tool message over the threshold is not a recovered segment"
	ProblemUnknownCall   = "tool message answers no earlier tool call"
	ProblemAnsweredTwice = "tool call answered twice"
)

// ErrInvalidThreshold is returned by NewHistory for a threshold <= 0.
var ErrInvalidThreshold = errors.New("agent: history threshold must be > 0")

// History is a conversation whose tool messages stay bounded: no tool
// message holds a body larger than the threshold unless it is a recovered
// segment that a Rehydrator verified (Verify checks it). A History is not
// safe for concurrent use; a Loop owns it while it runs.
type History struct {
	threshold int64
	msgs      []Message
	budget    *budgetState
}

// NewHistory returns an empty history for the given inline threshold, which
// should be the policy's.
func NewHistory(threshold int64, msgs ...Message) (*History, error) {
	if threshold <= 0 {
		return nil, ErrInvalidThreshold
	}
	return &History{threshold: threshold, msgs: append([]Message(nil), msgs...)}, nil
}

// Threshold returns the history's inline threshold.
func (h *History) Threshold() int64 { return h.threshold }

// Append adds messages at the end. It does not check them; Verify does.
func (h *History) Append(msgs ...Message) { h.msgs = append(h.msgs, msgs...) }

// Len returns the number of messages.
func (h *History) Len() int { return len(h.msgs) }

// At returns message i.
func (h *History) At(i int) Message { return h.msgs[i] }

// Messages returns the messages. The slice is a copy; the messages share
// their tool calls and offloads with the history.
func (h *History) Messages() []Message { return append([]Message(nil), h.msgs...) }

// Verify checks the invariant: every tool message holds at most the
// threshold's bytes, or is a notice (its Offload's bounded notice, or a tool
// error without a decision, at most max(threshold, hybridctx.MaxNoticeLen)
// bytes), or is a recovered segment (its Offload inlined a
// *hybridctx.Segment with reason recovered_segment_bypass and its content is
// exactly those bytes); and every tool message answers exactly one earlier
// assistant tool call; and, once the loop compacted the history under a
// history budget, that the tool messages it weighed hold at most the budget
// (ProblemOverBudget otherwise, with the Shortfall the step reported). A
// masked message (Masked) may hold its mask, at most
// max(threshold, hybridctx.MaxMaskLen) bytes. The
// error is an *InvariantError naming the first offending message.
func (h *History) Verify() error {
	calls := map[string]bool{} // id → answered
	for i, m := range h.msgs {
		switch m.Role {
		case RoleAssistant:
			for _, c := range m.ToolCalls {
				calls[c.ID] = false
			}
		case RoleTool:
			n := int64(len(m.Content))
			answered, ok := calls[m.ToolCallID]
			switch {
			case !ok:
				return &InvariantError{Index: i, Problem: ProblemUnknownCall, Bytes: n, Threshold: h.threshold}
			case answered:
				return &InvariantError{Index: i, Problem: ProblemAnsweredTwice, Bytes: n, Threshold: h.threshold}
			}
			calls[m.ToolCallID] = true
			if n > limit(m, h.threshold) && !recovered(m) {
				return &InvariantError{Index: i, Problem: ProblemOversized, Bytes: n, Threshold: h.threshold}
			}
		}
	}
	return h.verifyBudget()
}

// limit is the most bytes tool message m may hold unless it is a recovered
// segment: the threshold, or for a notice (the Offload's own) and for a tool
// error without a decision, max(threshold, hybridctx.MaxNoticeLen), since
// neither is a tool result's body.
func limit(m Message, threshold int64) int64 {
	if m.Masked {
		return max(threshold, hybridctx.MaxMaskLen)
	}
	if (m.Offload == nil && m.IsError) || (m.Offload != nil && m.Offload.Notice != "" && m.Content == m.Offload.Notice) {
		return max(threshold, hybridctx.MaxNoticeLen)
	}
	return threshold
}

// recovered reports whether m's content is exactly a verified segment.
func recovered(m Message) bool {
	o := m.Offload
	if o == nil || o.Reason() != hybridctx.RecoveredSegmentBypass {
		return false
	}
	s := o.Segment()
	return s != nil && s.SkipOffload() && string(s.Bytes()) == m.Content
}

// Size is what a history weighs, in bytes of message content and tool-call
// arguments.
type Size struct {
	// Bytes is the history as it is.
	Bytes int64 `json:"bytes"`
	// WithoutOffload is the history had every tool result been inlined:
	// each decided tool message counted at its result's size.
	WithoutOffload int64 `json:"without_offload"`
}

// Size weighs the history.
func (h *History) Size() Size {
	var s Size
	for _, m := range h.msgs {
		n := int64(len(m.Content))
		for _, c := range m.ToolCalls {
			n += int64(len(c.Arguments))
		}
		s.Bytes += n
		if m.Role == RoleTool && m.Offload != nil {
			in, _, _ := m.Offload.Diagnostics().Attribution()
			n += in - int64(len(m.Content))
		}
		s.WithoutOffload += n
	}
	return s
}
