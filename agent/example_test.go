package agent_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

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
