package loop

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
)

// ErrScriptEnded is returned by a ScriptedModel asked for more turns than
// its script has.
var ErrScriptEnded = errors.New("agent: script ended")

// Step is one scripted model turn. It sees the conversation so far and
// returns the reply; an error fails the turn.
type Step func(history []Message) (Reply, error)

// ScriptedModel is a Model that plays a fixed script, one Step per turn: no
// language model and no network, for tests and demos. Tool calls without an
// id get "call_<n>", numbered per model. It is safe for concurrent use.
type ScriptedModel struct {
	mu    sync.Mutex
	steps []Step
	next  int
	ids   int
}

// NewScriptedModel returns a model that plays steps in order.
func NewScriptedModel(steps ...Step) *ScriptedModel {
	return &ScriptedModel{steps: append([]Step(nil), steps...)}
}

// Next implements Model.
func (m *ScriptedModel) Next(ctx context.Context, history []Message, _ []agent.ToolSpec) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next >= len(m.steps) {
		return Reply{}, ErrScriptEnded
	}
	step := m.steps[m.next]
	m.next++
	r, err := step(history)
	if err != nil {
		return Reply{}, err
	}
	calls := make([]ToolCall, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		if c.ID == "" {
			m.ids++
			c.ID = "call_" + strconv.Itoa(m.ids)
		}
		calls[i] = c
	}
	r.ToolCalls = calls
	return r, nil
}

// Remaining returns how many steps have not been played.
func (m *ScriptedModel) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps) - m.next
}

// Say is a step that answers text and ends the run.
func Say(text string) Step {
	return func([]Message) (Reply, error) { return Reply{Content: text}, nil }
}

// CallTool is a step that calls one tool with args encoded as JSON
// (json.RawMessage, []byte and string are taken as they are).
func CallTool(name string, args any) Step {
	raw, err := encodeArgs(args)
	return func([]Message) (Reply, error) {
		if err != nil {
			return Reply{}, err
		}
		return Reply{ToolCalls: []ToolCall{{Name: name, Arguments: raw}}}, nil
	}
}

// Calls is a step that calls several tools in one turn.
func Calls(calls ...ToolCall) Step {
	return func([]Message) (Reply, error) {
		return Reply{ToolCalls: append([]ToolCall(nil), calls...)}, nil
	}
}

// ErrNoReference is returned by ReadLatest when no tool message of the
// history starts with a reference.
var ErrNoReference = errors.New("agent: no artifact reference in the history")

// ReadLatest is a step that calls the read tool named tool on the newest
// reference in the history, with the given range and max_bytes (0 leaves
// max_bytes out).
func ReadLatest(tool string, offset, length, maxBytes int64) Step {
	return func(h []Message) (Reply, error) {
		ref, ok := LatestReference(h)
		if !ok {
			return Reply{}, ErrNoReference
		}
		return Reply{ToolCalls: []ToolCall{{Name: tool, Arguments: agent.ReadArguments(ref.String(), offset, length, maxBytes)}}}, nil
	}
}

// LatestReference returns the reference on the first line of the newest
// tool message that has one, as a model reading the notice would.
func LatestReference(h []Message) (artifact.Ref, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role != RoleTool {
			continue
		}
		first, _, _ := strings.Cut(h[i].Content, "\n")
		if ref, err := artifact.ParseRef(first); err == nil {
			return ref, true
		}
	}
	return artifact.Ref{}, false
}

func encodeArgs(v any) (json.RawMessage, error) {
	switch a := v.(type) {
	case nil:
		return json.RawMessage(`{}`), nil
	case json.RawMessage:
		return a, nil
	case []byte:
		return json.RawMessage(a), nil
	case string:
		return json.RawMessage(a), nil
	}
	b, err := json.Marshal(v)
	return json.RawMessage(b), err
}
