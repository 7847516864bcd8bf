package mcpproxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestHTTPUpstreamStandaloneStream(t *testing.T) {
	changed := make(chan struct{}, 100)
	up := newUpstream()
	gets := make(chan struct{}, 10)
	h := streamable(up)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets <- struct{}{}
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	p := proxyFor(t, openStore(t, "mem://"), owner("sa"), nil)
	proxyT, clientT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background(), &HTTPUpstream{URL: srv.URL}, proxyT) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(context.Background(), clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(); <-done }()
	<-gets // the proxy opened the upstream's standalone stream
	// A tool added outside any request: the change notice travels on the
	// standalone stream only. Add until one arrives (the stream may attach
	// just after the GET is seen).
	for i := 0; ; i++ {
		up.srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("late%d", i), InputSchema: objectSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("x"), nil })
		select {
		case <-changed:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if i == 50 {
			t.Fatal("no list_changed notification reached the client")
		}
	}
}
