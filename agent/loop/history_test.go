package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/agent/internal/agenttest"
	"github.com/hybridctx/hybridctx/agent/loop"
)

func call(id string) loop.Message {
	return loop.Message{Role: loop.RoleAssistant, ToolCalls: []loop.ToolCall{{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}}}
}

func toolMsg(id, content string) loop.Message {
	return loop.Message{Role: loop.RoleTool, ToolCallID: id, Content: content}
}

func wantProblem(t *testing.T, h *loop.History, index int, problem string) {
	t.Helper()
	err := h.Verify()
	var ie *loop.InvariantError
	if !errors.As(err, &ie) || !errors.Is(err, loop.ErrInvariant) {
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
	if _, err := loop.NewHistory(0); !errors.Is(err, loop.ErrInvalidThreshold) {
		t.Fatal(err)
	}
	h, _ := loop.NewHistory(10, loop.Message{Role: loop.RoleSystem, Content: strings.Repeat("s", 100)})
	h.Append(loop.Message{Role: loop.RoleUser, Content: strings.Repeat("u", 100)}, call("a"), toolMsg("a", "0123456789"))
	if err := h.Verify(); err != nil {
		t.Fatalf("exactly at the threshold, long system and user messages: %v", err)
	}
	h.Append(call("b"), toolMsg("b", "SECRET-0123"))
	wantProblem(t, h, 5, loop.ProblemOversized)

	// A tool error is not a body: it may take a notice's room, no more.
	h, _ = loop.NewHistory(10, call("e"), loop.Message{Role: loop.RoleTool, ToolCallID: "e", IsError: true, Content: strings.Repeat("e", hybridctx.MaxNoticeLen)})
	if err := h.Verify(); err != nil {
		t.Fatal(err)
	}
	h.Append(call("f"), loop.Message{Role: loop.RoleTool, ToolCallID: "f", IsError: true, Content: strings.Repeat("e", hybridctx.MaxNoticeLen+1)})
	wantProblem(t, h, 3, loop.ProblemOversized)

	h, _ = loop.NewHistory(10, toolMsg("x", "ok"))
	wantProblem(t, h, 0, loop.ProblemUnknownCall)
	h, _ = loop.NewHistory(10, call("a"), toolMsg("a", "1"), toolMsg("a", "2"))
	wantProblem(t, h, 2, loop.ProblemAnsweredTwice)
}

func TestHistoryRecoveredSegment(t *testing.T) {
	e := agenttest.NewEnv(t, 16, 1<<20)
	body := agenttest.Text(2000, 9)
	ref := agenttest.Stored(t, e, body)
	out, err := e.MW.Call(context.Background(), hybridctx.Call{}, e.Read.Call, agent.ReadArguments(ref, 0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	notice, _ := e.Off.Offload(context.Background(), hybridctx.Call{}, body+"x")
	h, _ := loop.NewHistory(16, call("r"), loop.Message{Role: loop.RoleTool, ToolCallID: "r", Content: out.Text(), Offload: out},
		call("n"), loop.Message{Role: loop.RoleTool, ToolCallID: "n", Content: notice.Text(), Offload: notice})
	if err := h.Verify(); err != nil {
		t.Fatalf("a recovered segment and a notice over the threshold: %v", err)
	}
	// The same decision cannot vouch for other content.
	h.Append(call("f"), loop.Message{Role: loop.RoleTool, ToolCallID: "f", Content: strings.ToUpper(out.Text()), Offload: out})
	wantProblem(t, h, 5, loop.ProblemOversized)
	// Nor can an inline decision of a large tool result that is not a segment.
	bypass, _ := e.Off.Offload(context.Background(), hybridctx.Call{}, body) // offloaded, not inline
	h, _ = loop.NewHistory(16, call("g"), loop.Message{Role: loop.RoleTool, ToolCallID: "g", Content: body, Offload: bypass})
	wantProblem(t, h, 1, loop.ProblemOversized)
}

func TestHistorySize(t *testing.T) {
	e := agenttest.NewEnv(t, 16, 0)
	big := agenttest.Text(1000, 10)
	out, _ := e.Off.Offload(context.Background(), hybridctx.Call{}, big)
	small, _ := e.Off.Offload(context.Background(), hybridctx.Call{}, "tiny")
	h, _ := loop.NewHistory(16, loop.Message{Role: loop.RoleUser, Content: "hello"}, call("a"),
		loop.Message{Role: loop.RoleTool, ToolCallID: "a", Content: out.Text(), Offload: out},
		call("b"), loop.Message{Role: loop.RoleTool, ToolCallID: "b", Content: small.Text(), Offload: small})
	s := h.Size()
	want := int64(5 + 2 + len(out.Text()) + 2 + 4)
	if s.Bytes != want || s.WithoutOffload != want-int64(len(out.Text()))+1000 {
		t.Fatalf("size %+v, want bytes %d, without %d", s, want, want-int64(len(out.Text()))+1000)
	}
	if h.Len() != 5 || h.At(0).Content != "hello" || len(h.Messages()) != 5 {
		t.Fatal("accessors")
	}
}
