package mcpgo_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/mcpgo"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// An mcp-go server whose large tool results reach clients as a notice and
// a resource_link, with the read tools to bring them back.
func ExampleMiddleware() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "mcp", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 256}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)

	s := server.NewMCPServer("logs", "1.0", server.WithToolHandlerMiddleware(mcpgo.Middleware(off, nil)))
	s.AddTool(mcp.NewTool("dump"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("row\n", 1000)), nil
	})
	_ = mcpgo.AddReadTools(s, reh, nil)

	c, _ := client.NewInProcessClient(s)
	defer c.Close()
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	res, _ := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "dump"}})
	link := res.Content[1].(mcp.ResourceLink)
	fmt.Println(link.URI, *link.Size)
	page, _ := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_artifact",
		Arguments: map[string]any{"reference": link.URI, "offset": 0, "length": 8}}})
	fmt.Printf("%q\n", page.Content[0].(mcp.TextContent).Text)
	// Output:
	// artifact://sha256/33cbec9d7e23a2b6b79541b3db9899bb381a499cb19fd2649195c5c49d37cda8 4000
	// "row\nrow\n"
}
