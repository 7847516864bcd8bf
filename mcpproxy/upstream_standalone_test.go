package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestScanEvents(t *testing.T) {
	in := ": comment\r\nid: 7\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n" +
		"data:x\n\nevent: other\ndata: y\nid: 8\n\n\n" + "data: tail-without-blank-line"
	type ev struct{ id, event, data string }
	var got []ev
	err := scanEvents(strings.NewReader(in), 0, func(id, event string, data []byte) bool {
		got = append(got, ev{id, event, string(data)})
		return true
	})
	want := []ev{{"7", "message", "{\"a\":\n1}"}, {"7", "", "x"}, {"8", "other", "y"}}
	if err == nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, %v; want %v and the end of input", got, err, want)
	}
	err = scanEvents(strings.NewReader("data: "+strings.Repeat("z", 100)+"\n\n"), 50, func(string, string, []byte) bool { return true })
	if !errors.Is(err, errEventTooLarge) {
		t.Fatalf("oversized event: %v", err)
	}
	n := 0
	_ = scanEvents(strings.NewReader("data: 1\n\ndata: 2\n\n"), 0, func(string, string, []byte) bool { n++; return false })
	if n != 1 {
		t.Fatalf("fn returning false did not stop: %d", n)
	}
}

func FuzzScanEvents(f *testing.F) {
	for _, s := range []string{"", "data: {}\n\n", ": c\nid: 1\ndata: a\ndata: b\n\n", "data:x\r\n\r\n", "event: e\ndata\n\n"} {
		f.Add(s, 16)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		_ = scanEvents(strings.NewReader(s), limit, func(id, event string, data []byte) bool {
			if limit > 0 && len(data) > limit {
				t.Fatalf("event of %d bytes over the limit %d", len(data), limit)
			}
			if strings.ContainsAny(event, "\n") || strings.ContainsAny(id, "\n\x00") {
				t.Fatalf("field with a line break: %q %q", id, event)
			}
			return true
		})
	})
}

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
