package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// A scripted agent calls a tool whose 16,000-byte result is offloaded, reads
// the first 32 bytes back through read_artifact, and answers.
func Example() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 256}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	mw, _ := agent.NewMiddleware(off)
	read, _ := agent.NewReadTool(reh, &agent.ReadToolOptions{BudgetCap: 4096})

	logs := agent.Tool{
		Spec: agent.ToolSpec{Name: "logs", Description: "recent access log", Parameters: json.RawMessage(`{"type":"object"}`)},
		Func: func(context.Context, json.RawMessage) (any, error) {
			return strings.Repeat("GET /health 200\n", 1000), nil
		},
	}
	model := agent.NewScriptedModel(
		agent.CallTool("logs", nil),
		agent.ReadLatest(read.Name(), 0, 32, 0),
		agent.Say("The service is healthy."),
	)
	loop, _ := agent.NewLoop(agent.Config{Model: model, Middleware: mw, Tools: []agent.Tool{logs}, ReadTool: read})
	h, _ := agent.NewHistory(256, agent.Message{Role: agent.RoleUser, Content: "Is the service healthy?"})
	if _, err := loop.Run(ctx, h); err != nil {
		fmt.Println(err)
	}
	for _, m := range h.Messages() {
		line, _, _ := strings.Cut(m.Content, "\n")
		for _, c := range m.ToolCalls {
			line += "[" + c.Name + "]"
		}
		fmt.Printf("%-9s %s\n", m.Role, line)
	}
	fmt.Println("verify:", h.Verify())
	// Output:
	// user      Is the service healthy?
	// assistant [logs]
	// tool      artifact://sha256/349edb13b573e5d22614e7dced2f93b7f3cd879e75033d486e51237e6ed38de2
	// assistant [read_artifact]
	// tool      GET /health 200
	// assistant The service is healthy.
	// verify: <nil>
}

// The read tool answers a read larger than its budget with a categorical
// error the model can act on.
func ExampleReadTool_Call() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 64}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	read, _ := agent.NewReadTool(reh, &agent.ReadToolOptions{BudgetCap: 100})

	out, _ := off.Offload(ctx, hybridctx.Call{Tool: "dump", ID: "c1"}, strings.Repeat("x", 1000))
	_, err := read.Call(ctx, agent.ReadArguments(out.Ref.String(), 0, 0, 0))
	fmt.Println(err)
	seg, _ := read.Call(ctx, agent.ReadArguments(out.Ref.String(), 900, 100, 0))
	fmt.Println(len(seg.(*hybridctx.Segment).Bytes()))
	// Output:
	// hybridctx: over_budget (budget_exceeded): the range is 1000 bytes, the budget 100; use read_artifact with offset/length to read at most 100 bytes at a time (the body is 1000 bytes).
	// 100
}
