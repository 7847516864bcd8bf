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

func Example() {
	ctx := context.Background()
	mem := memstore.New()
	store := workspace.New(mem, mem)
	binding, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, store)
	off, _ := hybridctx.NewOffloader(binding, hybridctx.Policy{InlineThreshold: 64}, nil)

	big := strings.Repeat("log line\n", 100)
	out, _ := off.Offload(ctx, hybridctx.Call{Tool: "grep", ID: "c1"}, big)
	fmt.Println(out.Outcome(), out.Reason())
	fmt.Println(out.Text())

	reh, _ := hybridctx.NewRehydrator(binding, nil)
	got, _ := reh.Rehydrate(ctx, hybridctx.Request{Reference: out.Ref.String(), Budget: 4096, Length: 18})
	fmt.Println(got.Outcome(), string(got.Segment.Bytes()) == big[:18])
	// Output:
	// offloaded threshold_exceeded
	// artifact://sha256/0a55979c69b9c8bb50000a695397f2a2aef9fc909ec1775f15247b3227310607
	// 900 bytes, 100 lines, text; stored outside this conversation.
	// Search it with search_artifact {"reference": "artifact://sha256/0a55979c69b9c8bb50000a695397f2a2aef9fc909ec1775f15247b3227310607", "pattern": "<text to find>"} or read its lines with read_artifact {"reference": "artifact://sha256/0a55979c69b9c8bb50000a695397f2a2aef9fc909ec1775f15247b3227310607", "start_line": 1, "line_count": 100}.
	// resolved true
}
