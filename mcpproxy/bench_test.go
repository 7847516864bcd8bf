package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
)

// benchServer returns a server whose "cat" tool returns size bytes of text,
// different on every call (the first bytes count the calls), so the proxy
// stores a new body each time.
func benchServer(size int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	body := []byte(text(size))
	n := 0
	s.AddTool(&mcp.Tool{Name: "cat", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n++
		b := append([]byte(nil), body...)
		copy(b, fmt.Sprintf("%016d", n))
		if len(b) > size {
			b = b[:size]
		}
		return textResult(string(b)), nil
	})
	return s
}

// BenchmarkCallTool measures one tools/call from a Go SDK client, directly
// to an in-process server and through the proxy (directory workspace,
// threshold 16384), for a small and a 4 MiB text result. client_bytes/op is
// what crossed the client's connection. Run:
//
//	go test -run '^$' -bench CallTool -benchmem ./mcpproxy/
func BenchmarkCallTool(b *testing.B) {
	for _, size := range []int{100, 4 << 20} {
		for _, via := range []string{"direct", "proxy"} {
			b.Run(fmt.Sprintf("%s/%dB", via, size), func(b *testing.B) {
				ctx := context.Background()
				srvT, upT := mcp.NewInMemoryTransports()
				ss, err := benchServer(size).Connect(ctx, srvT, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer ss.Close()
				clientT := mcp.Transport(upT)
				if via == "proxy" {
					store := openStore(b, b.TempDir())
					bind, _ := hybridctx.NewBinding(owner("bench"), store)
					off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 16384}, nil)
					reh, _ := hybridctx.NewRehydrator(bind, nil)
					p, err := NewProxy(off, reh, nil)
					if err != nil {
						b.Fatal(err)
					}
					proxyT, cT := mcp.NewInMemoryTransports()
					done := make(chan error, 1)
					go func() { done <- p.Run(ctx, upT, proxyT) }()
					defer func() { <-done }()
					clientT = cT
				}
				w := &wire{countOnly: true}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, capture{clientT, w}, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer cs.Close()
				params := &mcp.CallToolParams{Name: "cat", Arguments: json.RawMessage(`{}`)}
				before := w.size()
				b.ResetTimer()
				for b.Loop() {
					res, err := cs.CallTool(ctx, params)
					if err != nil || len(res.Content) == 0 {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(w.size()-before)/float64(b.N), "client_bytes/op")
			})
		}
	}
}
