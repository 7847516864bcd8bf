package readtools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/readtools"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// Example offloads a log, then answers a model's search and line read with
// the one definition of the read tools.
func Example() {
	ctx := context.Background()
	mem := memstore.New()
	binding, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(binding, hybridctx.Policy{InlineThreshold: 256}, nil)
	var log strings.Builder
	for i := 1; i <= 2000; i++ {
		if i == 1234 {
			log.WriteString("ERROR disk full on /var\n")
			continue
		}
		fmt.Fprintf(&log, "step %d ok\n", i)
	}
	out, _ := off.Offload(ctx, hybridctx.Call{Tool: "build", ID: "c1"}, log.String())
	ref := out.Ref.String()

	reh, _ := hybridctx.NewRehydrator(binding, nil)
	tools, _ := readtools.New(reh, &readtools.Options{BudgetCap: 4096})
	for _, t := range tools.Tools() {
		fmt.Println(t.Name, json.Valid(t.InputSchema))
	}

	res, _ := tools.Call(ctx, "search_artifact", json.RawMessage(`{"reference":"`+ref+`","pattern":"ERROR","context_lines":1}`))
	fmt.Print(res.ModelText())
	res, _ = tools.Call(ctx, "read_artifact", json.RawMessage(`{"reference":"`+ref+`","start_line":1234,"line_count":1}`))
	fmt.Printf("%q\n", res.Bytes())
	res, _ = tools.Call(ctx, "query_artifact", json.RawMessage(`{"reference":"`+ref+`","filter":"."}`))
	fmt.Println(res.IsError, res.Text)
	// Output:
	// read_artifact true
	// search_artifact true
	// query_artifact true
	// 1233-step 1233 ok
	// 1234:ERROR disk full on /var
	// 1235-step 1235 ok
	// 1 match (showing 1-1)
	// "ERROR disk full on /var\n"
	// true hybridctx: view_failed (not_json): the stored result is not JSON; use search_artifact or read_artifact.
}
