package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
)

func constTool(v any) agent.ToolFunc {
	return func(context.Context, json.RawMessage) (any, error) { return v, nil }
}

func TestMiddlewareInline(t *testing.T) {
	e := newEnv(t, 64, 0)
	ctx, rec := reporting("root")
	out, err := e.MW.Call(ctx, hybridctx.Call{Tool: "t", ID: "c1"}, constTool("small result"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome() != hybridctx.Inline || out.Reason() != hybridctx.BelowThreshold || out.Text() != "small result" {
		t.Fatalf("got %v/%v %q", out.Outcome(), out.Reason(), out.Text())
	}
	if ev := rec.All(); len(ev) != 1 || ev[0].Diagnostics != out.Diagnostics() {
		t.Fatalf("events %v", ev)
	}
	if c := e.Inst.Counts(); c.NewWriters+c.GetRecords+c.Stats != 0 {
		t.Fatalf("an inline result touched the workspace: %+v", c)
	}
}

func TestMiddlewareOffloaded(t *testing.T) {
	e := newEnv(t, 64, 0)
	big := text(5000, 1)
	out, err := e.MW.Wrap("grep", constTool(big))(context.Background(), "c1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome() != hybridctx.Offloaded || out.Text() != out.Notice || len(out.Text()) > hybridctx.MaxNoticeLen {
		t.Fatalf("got %v, text %q", out.Outcome(), out.Text())
	}
	if first, _, _ := strings.Cut(out.Text(), "\n"); first != out.Ref.String() {
		t.Fatalf("notice starts %q", first)
	}
	got, err := e.Reh.Rehydrate(context.Background(), hybridctx.Request{Reference: out.Ref.String(), Budget: 1 << 20})
	if err != nil || string(got.Segment.Bytes()) != big {
		t.Fatalf("round trip: %v", err)
	}
	// The record names the wrapped tool and the call id, never the notice.
	rec, err := e.Store.GetRecord(context.Background(), testOwner, out.Ref)
	if err != nil || rec.Tool != "grep" || rec.CallID != "c1" {
		t.Fatalf("record %+v, %v", rec, err)
	}
	// The same content again is an existing reference with the same notice.
	again, err := e.MW.Call(context.Background(), hybridctx.Call{Tool: "grep", ID: "c2"}, constTool(big), nil)
	if err != nil || again.Outcome() != hybridctx.ExistingReference || again.Text() != out.Text() {
		t.Fatalf("again: %v %v", again.Outcome(), err)
	}
}

func TestMiddlewareFailedKeepsContent(t *testing.T) {
	bind, err := hybridctx.NewBinding(testOwner, nil)
	if err != nil {
		t.Fatal(err)
	}
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 8}, nil)
	mw, _ := agent.NewMiddleware(off)
	out, err := mw.Call(context.Background(), hybridctx.Call{Tool: "secret-tool", ID: "secret-call"}, constTool("0123456789abcdef"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome() != hybridctx.Failed || out.Reason() != hybridctx.NoAuthorizedWorkspace {
		t.Fatalf("got %v/%v", out.Outcome(), out.Reason())
	}
	if !strings.HasPrefix(out.Text(), "hybridctx: failed (no_authorized_workspace), 16 bytes") ||
		strings.Contains(out.Text(), "secret") || strings.Contains(out.Text(), "0123") {
		t.Fatalf("notice %q", out.Text())
	}
	if string(out.Content()) != "0123456789abcdef" {
		t.Fatalf("content lost: %q", out.Content())
	}
}

func TestMiddlewareSegmentBypass(t *testing.T) {
	e := newEnv(t, 64, 1<<20)
	big := text(10000, 2)
	stored, _ := e.Off.Offload(context.Background(), hybridctx.Call{}, big)
	out, err := e.MW.Call(context.Background(), hybridctx.Call{Tool: "read_artifact"}, e.Read.Call,
		agent.ReadArguments(stored.Ref.String(), 0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome() != hybridctx.Inline || out.Reason() != hybridctx.RecoveredSegmentBypass || out.Text() != big {
		t.Fatalf("got %v/%v, %d bytes", out.Outcome(), out.Reason(), len(out.Text()))
	}
	if out.Diagnostics().Content() != hybridctx.RecoveredContext {
		t.Fatalf("content %v", out.Diagnostics().Content())
	}
}

func TestMiddlewareToolErrorPassesThrough(t *testing.T) {
	e := newEnv(t, 8, 0)
	ctx, rec := reporting("root")
	boom := errors.New(strings.Repeat("x", 1000))
	writes := e.Inst.Counts().NewWriters
	_, err := e.MW.Call(ctx, hybridctx.Call{}, func(context.Context, json.RawMessage) (any, error) { return nil, boom }, nil)
	if !errors.Is(err, agent.ErrToolFailed) || !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if len(rec.All()) != 0 || e.Inst.Counts().NewWriters != writes {
		t.Fatal("a tool error was decided or stored")
	}
	if _, err := e.MW.Call(ctx, hybridctx.Call{}, nil, nil); !errors.Is(err, agent.ErrToolFailed) {
		t.Fatalf("nil tool: %v", err)
	}
}

func TestMiddlewareNoDecision(t *testing.T) {
	e := newEnv(t, 8, 0)
	if _, err := e.MW.Call(context.Background(), hybridctx.Call{}, constTool(make(chan int)), nil); !errors.Is(err, hybridctx.ErrUnserializable) {
		t.Fatalf("unserializable: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	tool := func(context.Context, json.RawMessage) (any, error) { ran = true; return "x", nil }
	if _, err := e.MW.Call(ctx, hybridctx.Call{}, tool, nil); !errors.Is(err, context.Canceled) || !ran {
		t.Fatalf("cancelled: %v (tool ran %v)", err, ran)
	}
	if _, err := agent.NewMiddleware(nil); !errors.Is(err, agent.ErrNilOffloader) {
		t.Fatalf("nil offloader: %v", err)
	}
}

func TestMiddlewareOverlongCallNotRun(t *testing.T) {
	e := newEnv(t, 64, 0)
	ran := false
	tool := func(context.Context, json.RawMessage) (any, error) { ran = true; return text(5000, 2), nil }
	long := strings.Repeat("i", artifact.MaxCallFieldLen+1)
	_, err := e.MW.Call(context.Background(), hybridctx.Call{Tool: "t", ID: long}, tool, nil)
	if !errors.Is(err, hybridctx.ErrInvalidCall) || ran {
		t.Fatalf("err %v, ran %v: want ErrInvalidCall before the tool runs", err, ran)
	}
	if c := e.Inst.Counts(); c.NewWriters != 0 {
		t.Fatalf("a refused call wrote: %+v", c)
	}
}
