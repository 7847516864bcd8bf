package langchaingo_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/tools"

	"github.com/hybridctx/hybridctx"
	hybridlc "github.com/hybridctx/hybridctx/adapters/langchaingo"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// A LangChainGo tool whose large output is stored, and the read tools an
// agent uses to bring it back: give an agent
// append([]tools.Tool{hybridlc.Wrap(t, off)}, hybridlc.ReadTools(reh, nil)...).
func ExampleWrap() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "lc", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 256}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)

	ts := append([]tools.Tool{hybridlc.Wrap(textTool{name: "dump", text: strings.Repeat("row\n", 1000)}, off)},
		hybridlc.ReadTools(reh, nil)...)
	notice, _ := ts[0].Call(ctx, "")
	ref, _, _ := strings.Cut(notice, "\n")
	fmt.Println(ref)
	page, _ := ts[1].Call(ctx, `{"reference":"`+ref+`","start_line":2,"line_count":2}`)
	fmt.Printf("%s: %q\n", ts[1].Name(), page)
	// Output:
	// artifact://sha256/33cbec9d7e23a2b6b79541b3db9899bb381a499cb19fd2649195c5c49d37cda8
	// read_artifact: "row\nrow\n"
}
