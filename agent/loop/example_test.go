package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/agent/loop"
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
	model := loop.NewScriptedModel(
		loop.CallTool("logs", nil),
		loop.ReadLatest(read.Name(), 0, 32, 0),
		loop.Say("The service is healthy."),
	)
	l, _ := loop.NewLoop(loop.Config{Model: model, Middleware: mw, Tools: []agent.Tool{logs}, ReadTool: read})
	h, _ := loop.NewHistory(256, loop.Message{Role: loop.RoleUser, Content: "Is the service healthy?"})
	if _, err := l.Run(ctx, h); err != nil {
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
