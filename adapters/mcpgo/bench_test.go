package mcpgo_test

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	"github.com/hybridctx/hybridctx/adapters/mcpgo"
)

// BenchmarkToolCall compares a tool handler called directly with the same
// handler behind Middleware (no transport: the transport costs the same
// either way), for a result kept inline and one offloaded (fresh content
// every call). SHA-256 of the same bytes is the yardstick.
func BenchmarkToolCall(b *testing.B) {
	ctx := context.Background()
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "t"}}
	for _, sz := range adapttest.BenchSizes {
		i := 0
		handler := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			i++
			return mcp.NewToolResultText(adapttest.Payload(i, sz.Size)), nil
		}
		b.Run(sz.Name+"/direct", func(b *testing.B) {
			b.SetBytes(int64(sz.Size))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = handler(ctx, req)
			}
		})
		b.Run(sz.Name+"/middleware", func(b *testing.B) {
			env := adapttest.New(b, nil)
			h := mcpgo.Middleware(env.Off, nil)(handler)
			b.SetBytes(int64(sz.Size))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = h(ctx, req)
			}
		})
		b.Run(sz.Name+"/sha256", func(b *testing.B) {
			p := []byte(adapttest.Payload(0, sz.Size))
			b.SetBytes(int64(sz.Size))
			for b.Loop() {
				sha256.Sum256(p)
			}
		})
	}
}
