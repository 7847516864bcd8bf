package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
)

// RunChild runs child on h as a sub-agent named agentID: when ctx carries a
// reporter, the child's decisions are reported through its Child(agentID),
// so their events carry the parent's agent id, depth+1 and the tree's shared
// sequence. Without a reporter it is child.Run.
func RunChild(ctx context.Context, agentID string, child *Loop, h *History) (*Result, error) {
	if r := hybridctx.ReporterFrom(ctx); r != nil {
		ctx = hybridctx.WithReporter(ctx, r.Child(agentID))
	}
	return child.Run(ctx, h)
}

// DelegateOptions configure DelegateTool.
type DelegateOptions struct {
	// Name is the tool's name; default "delegate".
	Name string
	// Description tells the model what the sub-agent can do.
	Description string
	// AgentID prefixes the sub-agents' ids: each call runs a new sub-agent
	// "<AgentID>-<n>" (n from 1). Default "subagent".
	AgentID string
	// New builds the sub-agent's loop and its opening history for a task.
	// Required.
	New func(ctx context.Context, task string) (*Loop, *History, error)
}

// ErrNoTask is returned by a delegate tool called without a task.
var ErrNoTask = errors.New(`delegate: arguments must be {"task": "<non-empty text>"}`)

// DelegateTool returns a tool {"task": string} that runs a sub-agent (see
// RunChild) on the task and returns its final answer as the tool result,
// which the parent's middleware decides like any other. A sub-agent that
// fails returns its error as the tool error.
func DelegateTool(opts DelegateOptions) (agent.Tool, error) {
	if opts.New == nil {
		return agent.Tool{}, fmt.Errorf("%w: the delegate tool needs New", ErrInvalidConfig)
	}
	name, prefix := opts.Name, opts.AgentID
	if name == "" {
		name = "delegate"
	}
	if prefix == "" {
		prefix = "subagent"
	}
	desc := opts.Description
	if desc == "" {
		desc = "Hand a task to a sub-agent and get its final answer."
	}
	var n atomic.Int64
	fn := func(ctx context.Context, args json.RawMessage) (any, error) {
		var a struct {
			Task string `json:"task"`
		}
		if err := json.Unmarshal(args, &a); err != nil || a.Task == "" {
			return nil, ErrNoTask
		}
		loop, h, err := opts.New(ctx, a.Task)
		if err != nil {
			return nil, err
		}
		res, err := RunChild(ctx, prefix+"-"+strconv.FormatInt(n.Add(1), 10), loop, h)
		if err != nil {
			return nil, err
		}
		return res.Final, nil
	}
	return agent.Tool{
		Spec: agent.ToolSpec{Name: name, Description: desc, Parameters: json.RawMessage(
			`{"type":"object","properties":{"task":{"type":"string","description":"what the sub-agent should do"}},"required":["task"],"additionalProperties":false}`)},
		Func: fn,
	}, nil
}
