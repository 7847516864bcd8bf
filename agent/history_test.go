package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
)

func call(id string) agent.Message {
	return agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}}}
}

func toolMsg(id, content string) agent.Message {
	return agent.Message{Role: agent.RoleTool, ToolCallID: id, Content: content}
}

func wantProblem(t *testing.T, h *agent.History, index int, problem string) {
	t.Helper()
	err := h.Verify()
	var ie *agent.InvariantError
	if !errors.As(err, &ie) || !errors.Is(err, agent.ErrInvariant) {
		t.Fatalf("Verify = %v, want an *InvariantError", err)
	}
	if ie.Index != index || ie.Problem != problem {
		t.Fatalf("got message %d %q, want %d %q", ie.Index, ie.Problem, index, problem)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("error repeats content: %v", err)
	}
}

func TestHistoryVerify(t *testing.T) {
	if _, err := agent.NewHistory(0); !errors.Is(err, agent.ErrInvalidThreshold) {
		t.Fatal(err)
	}
	h, _ := agent.NewHistory(10, agent.Message{Role: agent.RoleSystem, Content: strings.Repeat("s", 100)})
	h.Append(agent.Message{Role: agent.RoleUser, Content: strings.Repeat("u", 100)}, call("a"), toolMsg("a", "0123456789"))
	if err := h.Verify(); err != nil {
		t.Fatalf("exactly at the threshold, long system and user messages: %v", err)
	}
	h.Append(call("b"), toolMsg("b", "SECRET-0123"))
	wantProblem(t, h, 5, agent.ProblemOversized)

	// A tool error is not a body: it may take a notice's room, no more.
	h, _ = agent.NewHistory(10, call("e"), agent.Message{Role: agent.RoleTool, ToolCallID: "e", IsError: true, Content: strings.Repeat("e", hybridctx.MaxNoticeLen)})
	if err := h.Verify(); err != nil {
		t.Fatal(err)
	}
	h.Append(call("f"), agent.Message{Role: agent.RoleTool, ToolCallID: "f", IsError: true, Content: strings.Repeat("e", hybridctx.MaxNoticeLen+1)})
	wantProblem(t, h, 3, agent.ProblemOversized)

	h, _ = agent.NewHistory(10, toolMsg("x", "ok"))
	wantProblem(t, h, 0, agent.ProblemUnknownCall)
	h, _ = agent.NewHistory(10, call("a"), toolMsg("a", "1"), toolMsg("a", "2"))
	wantProblem(t, h, 2, agent.ProblemAnsweredTwice)
}

func TestHistoryRecoveredSegment(t *testing.T) {
	e := newEnv(t, 16, 1<<20)
	body := text(2000, 9)
	ref := stored(t, e, body)
	out, err := e.mw.Call(context.Background(), hybridctx.Call{}, e.read.Call, agent.ReadArguments(ref, 0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	notice, _ := e.off.Offload(context.Background(), hybridctx.Call{}, body+"x")
	h, _ := agent.NewHistory(16, call("r"), agent.Message{Role: agent.RoleTool, ToolCallID: "r", Content: out.Text(), Offload: out},
		call("n"), agent.Message{Role: agent.RoleTool, ToolCallID: "n", Content: notice.Text(), Offload: notice})
	if err := h.Verify(); err != nil {
		t.Fatalf("a recovered segment and a notice over the threshold: %v", err)
	}
	// The same decision cannot vouch for other content.
	h.Append(call("f"), agent.Message{Role: agent.RoleTool, ToolCallID: "f", Content: strings.ToUpper(out.Text()), Offload: out})
	wantProblem(t, h, 5, agent.ProblemOversized)
	// Nor can an inline decision of a large tool result that is not a segment.
	bypass, _ := e.off.Offload(context.Background(), hybridctx.Call{}, body) // offloaded, not inline
	h, _ = agent.NewHistory(16, call("g"), agent.Message{Role: agent.RoleTool, ToolCallID: "g", Content: body, Offload: bypass})
	wantProblem(t, h, 1, agent.ProblemOversized)
}

func TestHistorySize(t *testing.T) {
	e := newEnv(t, 16, 0)
	big := text(1000, 10)
	out, _ := e.off.Offload(context.Background(), hybridctx.Call{}, big)
	small, _ := e.off.Offload(context.Background(), hybridctx.Call{}, "tiny")
	h, _ := agent.NewHistory(16, agent.Message{Role: agent.RoleUser, Content: "hello"}, call("a"),
		agent.Message{Role: agent.RoleTool, ToolCallID: "a", Content: out.Text(), Offload: out},
		call("b"), agent.Message{Role: agent.RoleTool, ToolCallID: "b", Content: small.Text(), Offload: small})
	s := h.Size()
	want := int64(5 + 2 + len(out.Text()) + 2 + 4)
	if s.Bytes != want || s.WithoutOffload != want-int64(len(out.Text()))+1000 {
		t.Fatalf("size %+v, want bytes %d, without %d", s, want, want-int64(len(out.Text()))+1000)
	}
	if h.Len() != 5 || h.At(0).Content != "hello" || len(h.Messages()) != 5 {
		t.Fatal("accessors")
	}
}
