package eino_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/hybridctx/hybridctx"
	hybrideino "github.com/hybridctx/hybridctx/adapters/eino"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// A tools node whose large results are offloaded, and whose read tool
// brings a range back.
func Example() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "eino", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 256}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	rt, _ := agent.NewReadTool(reh, nil)

	mw, _ := hybrideino.ToolMiddleware(off, nil)
	read, _ := hybrideino.NewReadTool(rt)
	node, _ := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               []tool.BaseTool{textTool{name: "dump", text: strings.Repeat("row\n", 1000)}, read},
		ToolCallMiddlewares: []compose.ToolMiddleware{mw},
	})

	msgs, _ := node.Invoke(ctx, schema.AssistantMessage("", []schema.ToolCall{call("c1", "dump", "{}")}))
	ref, _, _ := strings.Cut(msgs[0].Content, "\n")
	fmt.Println(ref)
	msgs, _ = node.Invoke(ctx, schema.AssistantMessage("", []schema.ToolCall{
		call("c2", "read_artifact", `{"reference":"`+ref+`","offset":0,"length":8}`)}))
	fmt.Printf("%q\n", msgs[0].Content)
	// Output:
	// artifact://sha256/33cbec9d7e23a2b6b79541b3db9899bb381a499cb19fd2649195c5c49d37cda8
	// "row\nrow\n"
}
