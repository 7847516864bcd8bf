package hybridctx_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// A history of four 1,000-byte results under a 2,500-byte budget: the step
// masks the oldest, toward the low water mark (1,250 bytes) but never the
// most recent one, and each mask reads back to the result it replaced.
func ExampleCompactor() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4096,
		History: hybridctx.HistoryPolicy{Budget: 2500, KeepRecent: 1}}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	c, _ := hybridctx.NewCompactor(off, nil)

	var calls []string
	var results []hybridctx.HistoryResult
	for i := range 4 {
		id := fmt.Sprintf("call_%d", i)
		calls = append(calls, id)
		results = append(results, hybridctx.HistoryResult{Call: hybridctx.Call{Tool: "grep", ID: id},
			Text: strings.Repeat(fmt.Sprintf("match %d\n", i), 125), Form: hybridctx.FormInline})
	}
	out, _ := c.Compact(ctx, calls, results)
	fmt.Println(out.Masked, "masked;", out.Before.Bytes, "→", out.After.Bytes, "bytes")
	first := out.Results[0].Text
	fmt.Println(strings.SplitN(first, "\n", 2)[1])
	st, _ := hybridctx.ParseStoredText(first)
	back, _ := reh.Rehydrate(ctx, hybridctx.Request{Reference: st.Ref.String(), Budget: st.Size})
	fmt.Println(string(back.Segment.Bytes()) == results[0].Text)
	// Output:
	// 3 masked; 4000 → 1480 bytes
	// 1000 bytes, 125 lines, text; masked. Read with search_artifact, read_artifact
	// true
}
