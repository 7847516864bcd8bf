package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent/internal/agenttest"
	"github.com/hybridctx/hybridctx/agent/loop"
)

// TestSubAgentEvents runs a root agent that delegates twice; each sub-agent
// offloads a large result, reads part of it back, and answers with a result
// large enough that the root's middleware offloads it too. Events must carry
// the true agent, parent and depth, on one gap-free sequence.
func TestSubAgentEvents(t *testing.T) {
	e := agenttest.NewEnv(t, 256, 4096)
	ctx, rec := agenttest.Reporting("root")
	var children []*loop.ScriptedModel
	delegate, err := loop.DelegateTool(loop.DelegateOptions{
		AgentID: "researcher",
		New: func(_ context.Context, task string) (*loop.Loop, *loop.History, error) {
			m := loop.NewScriptedModel(
				loop.CallTool("fetch", fetchArgs(3000, uint64(len(children)))),
				loop.ReadLatest("read_artifact", 0, 100, 0),
				loop.Say(strings.Repeat(task+" ", 100)),
			)
			children = append(children, m)
			h, err := loop.NewHistory(256, loop.Message{Role: loop.RoleUser, Content: task})
			return newLoop(t, e, m, fetchTool()), h, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	root := loop.NewScriptedModel(
		loop.CallTool("delegate", `{"task":"summarize the test report"}`),
		loop.CallTool("fetch", fetchArgs(10, 1)),
		loop.CallTool("delegate", `{"task":"check the linker"}`),
		loop.CallTool("delegate", `{}`),
		loop.Say("done"),
	)
	h := newHistory(t, 256)
	if _, err := newLoop(t, e, root, delegate, fetchTool()).Run(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := h.Verify(); err != nil {
		t.Fatal(err)
	}
	if last := h.At(h.Len() - 2); !last.IsError || last.Content != "tool error: "+loop.ErrNoTask.Error() {
		t.Fatalf("task-less delegate: %q", last.Content)
	}
	type want struct {
		agent, parent string
		depth         int
		outcome       hybridctx.Outcome
	}
	wants := []want{
		{"researcher-1", "root", 1, hybridctx.Offloaded},
		{"researcher-1", "root", 1, hybridctx.Resolved},
		{"researcher-1", "root", 1, hybridctx.Inline},
		{"root", "", 0, hybridctx.Offloaded}, // the sub-agent's 1,800-byte answer
		{"root", "", 0, hybridctx.Inline},
		{"researcher-2", "root", 1, hybridctx.Offloaded},
		{"researcher-2", "root", 1, hybridctx.Resolved},
		{"researcher-2", "root", 1, hybridctx.Inline},
		{"root", "", 0, hybridctx.Offloaded},
	}
	events := rec.All()
	if len(events) != len(wants) {
		for _, ev := range events {
			t.Log(ev)
		}
		t.Fatalf("%d events, want %d", len(events), len(wants))
	}
	for i, ev := range events {
		w := wants[i]
		parent := ""
		if ev.ParentAgentID != nil {
			parent = *ev.ParentAgentID
		}
		if ev.Sequence != uint64(i+1) || ev.RunID != "run-1" || ev.AgentID != w.agent || parent != w.parent ||
			ev.Depth != w.depth || ev.Diagnostics.Outcome() != w.outcome {
			t.Errorf("event %d: #%d %s parent %q depth %d %v; want %+v", i, ev.Sequence, ev.AgentID, parent, ev.Depth, ev.Diagnostics.Outcome(), w)
		}
	}
	if events[3].ParentAgentID != nil {
		t.Fatal("the root has a parent")
	}
	for _, m := range children {
		if m.Remaining() != 0 {
			t.Fatal("a sub-agent did not finish its script")
		}
	}
}

func TestDelegateErrors(t *testing.T) {
	if _, err := loop.DelegateTool(loop.DelegateOptions{}); !errors.Is(err, loop.ErrInvalidConfig) {
		t.Fatal(err)
	}
	e := agenttest.NewEnv(t, 256, 0)
	boom := errors.New("no capacity")
	failing, _ := loop.DelegateTool(loop.DelegateOptions{New: func(context.Context, string) (*loop.Loop, *loop.History, error) {
		return nil, nil, boom
	}})
	if _, err := failing.Func(context.Background(), []byte(`{"task":"x"}`)); !errors.Is(err, boom) {
		t.Fatalf("builder error: %v", err)
	}
	stuck, _ := loop.DelegateTool(loop.DelegateOptions{New: func(context.Context, string) (*loop.Loop, *loop.History, error) {
		h, _ := loop.NewHistory(256)
		return newLoop(t, e, loop.NewScriptedModel()), h, nil
	}})
	if stuck.Spec.Name != "delegate" {
		t.Fatalf("default name %q", stuck.Spec.Name)
	}
	if _, err := stuck.Func(context.Background(), []byte(`{"task":"x"}`)); !errors.Is(err, loop.ErrScriptEnded) {
		t.Fatalf("sub-agent error: %v", err)
	}
	// Without a reporter, RunChild is Run.
	h, _ := loop.NewHistory(256)
	res, err := loop.RunChild(context.Background(), "x", newLoop(t, e, loop.NewScriptedModel(loop.Say("hi"))), h)
	if err != nil || res.Final != "hi" {
		t.Fatalf("%v %v", res, err)
	}
}
