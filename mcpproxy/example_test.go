package mcpproxy_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/mcpproxy"
)

// A Go MCP server bounds its own tool results in two lines.
func ExampleMiddleware() {
	ctx := context.Background()
	store, _ := backend.Open(ctx, "mem://", nil)
	defer store.Close()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "docs", Session: "s1"}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 1024}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)

	server := mcp.NewServer(&mcp.Implementation{Name: "logs", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "tail", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("log line\n", 1000)}}}, nil
		})
	server.AddReceivingMiddleware(mcpproxy.Middleware(off, nil))
	_ = mcpproxy.AddReadTools(server, reh, nil)

	// A client sees the notice and a link instead of 9000 bytes.
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(ctx, st, nil)
	defer ss.Close()
	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	defer cs.Close()
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tail", Arguments: map[string]any{}})
	notice := res.Content[0].(*mcp.TextContent).Text
	link := res.Content[1].(*mcp.ResourceLink)
	fmt.Println(strings.Split(notice, "\n")[1])
	fmt.Println(link.MIMEType, *link.Size, link.URI == strings.Split(notice, "\n")[0])

	// The model follows the notice.
	page, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_artifact",
		Arguments: map[string]any{"reference": link.URI, "offset": 9, "length": 9}})
	fmt.Printf("%q\n", page.Content[0].(*mcp.TextContent).Text)
	// Output:
	// 9000 bytes, 1000 lines, text; stored outside this conversation.
	// text/plain 9000 true
	// "log line\n"
}

// The proxy sits between any MCP client and any MCP server: here both are
// in process; the command line runs it over stdio with a Command upstream.
func ExampleProxy() {
	ctx := context.Background()
	store, _ := backend.Open(ctx, "mem://", nil)
	defer store.Close()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "fs", Session: "s1"}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 16384}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	proxy, _ := mcpproxy.NewProxy(off, reh, &mcpproxy.Options{Budget: 65536})

	upstream := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	upstream.AddTool(&mcp.Tool{Name: "cat", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 100000)}}}, nil
		})
	serverT, upstreamT := mcp.NewInMemoryTransports()
	ss, _ := upstream.Connect(ctx, serverT, nil)
	defer ss.Close()
	proxyT, clientT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- proxy.Run(ctx, upstreamT, proxyT) }()

	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "ide", Version: "1"}, nil).Connect(ctx, clientT, nil)
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "cat", Arguments: map[string]any{}})
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Println(len(c.Text) <= hybridctx.MaxNoticeLen, strings.Split(c.Text, "\n")[1])
		case *mcp.ResourceLink:
			fmt.Println(c.URI[:18], *c.Size)
		}
	}
	_ = cs.Close()
	fmt.Println(<-done)
	// Output:
	// true 100000 bytes, 1 lines, text; stored outside this conversation.
	// artifact://sha256/ 100000
	// <nil>
}

// Over HTTP, every MCP session gets its own proxy and its own upstream; the
// owner follows the client's credential, so a client whose session ends
// still reads its references in the next one.
func ExampleNewHTTPHandler() {
	ctx := context.Background()
	store, _ := backend.Open(ctx, "mem://", nil)
	defer store.Close()
	upstream := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	upstream.AddTool(&mcp.Tool{Name: "cat", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 100000)}}}, nil
		})
	h, _ := mcpproxy.NewHTTPHandler(func(ctx context.Context, _, credential string) (*mcpproxy.Proxy, mcp.Transport, error) {
		bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "fs", Session: "default" + credential}, store)
		off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 16384}, nil)
		reh, _ := hybridctx.NewRehydrator(bind, nil)
		proxy, err := mcpproxy.NewProxy(off, reh, nil)
		st, ct := mcp.NewInMemoryTransports()
		go func() {
			ss, err := upstream.Connect(context.Background(), st, nil)
			if err == nil {
				_ = ss.Wait()
			}
		}()
		return proxy, ct, err
	}, &mcpproxy.HTTPOptions{MaxSessions: 4})
	defer h.Close()
	srv := httptest.NewServer(h) // mount at /mcp in a real server
	defer srv.Close()

	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "ide", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	defer cs.Close()
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "cat", Arguments: map[string]any{}})
	fmt.Println(strings.Split(res.Content[0].(*mcp.TextContent).Text, "\n")[1])
	fmt.Println(h.Sessions(), "session")
	// Output:
	// 100000 bytes, 1 lines, text; stored outside this conversation.
	// 1 session
}
