package eino_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/hybridctx/hybridctx"
	hybrideino "github.com/hybridctx/hybridctx/adapters/eino"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// brokenStream streams one chunk, then fails.
type brokenStream struct{ err error }

func (brokenStream) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: "broken", Desc: "fails mid-stream"}, nil
}

func (b brokenStream) StreamableRun(context.Context, string, ...tool.Option) (*schema.StreamReader[string], error) {
	sr, sw := schema.Pipe[string](2)
	go func() {
		defer sw.Close()
		sw.Send(strings.Repeat("x", 1000), nil)
		sw.Send("", b.err)
	}()
	return sr, nil
}

func TestStreamErrorPassesThrough(t *testing.T) {
	e := newEnv(t, 1<<20)
	mw, _ := hybrideino.ToolMiddleware(e.off, nil)
	boom := errors.New("connection reset")
	node, _ := compose.NewToolNode(context.Background(), &compose.ToolsNodeConfig{
		Tools: []tool.BaseTool{brokenStream{boom}}, ToolCallMiddlewares: []compose.ToolMiddleware{mw}})
	_, err := node.Invoke(e.ctx, schema.AssistantMessage("", []schema.ToolCall{call("c1", "broken", "{}")}))
	if !errors.Is(err, boom) || !errors.Is(err, hybridctx.ErrSource) {
		t.Fatalf("err %v", err)
	}
	if len(e.outcomes()) != 0 {
		t.Fatal("a failed stream was decided")
	}
}

func TestReadToolStorageFailure(t *testing.T) {
	mem := memstore.New()
	cause := errors.New("records.db: I/O error")
	inst := drivertest.Instrument(mem, mem, &drivertest.Hooks{
		GetRecord: func(context.Context, artifact.Owner, artifact.Ref) error { return cause },
	})
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, workspace.New(inst, inst))
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	rts, _ := agent.NewReadTools(reh, nil)
	rt := rts.Read()
	read, _ := hybrideino.NewReadTool(rt)
	_, err := read.InvokableRun(context.Background(), `{"reference":"`+artifact.RefOf(nil).String()+`"}`)
	if !errors.Is(err, agent.ErrReadFailed) || !errors.Is(err, cause) {
		t.Fatalf("err %v", err)
	}
	if _, err := hybrideino.AgentMiddleware(nil, rts, nil); !errors.Is(err, hybrideino.ErrNilOffloader) {
		t.Fatal(err)
	}
}
