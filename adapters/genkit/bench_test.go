package genkit_test

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/firebase/genkit/go/ai"

	hybridgenkit "github.com/hybridctx/hybridctx/adapters/genkit"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
)

// BenchmarkToolCall compares a model call seeing one new tool response
// directly with the same call behind Middleware, for a result kept inline
// and one offloaded (fresh content every call). SHA-256 of the same bytes
// is the yardstick.
func BenchmarkToolCall(b *testing.B) {
	ctx := context.Background()
	model := func(context.Context, *ai.ModelRequest, ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		return &ai.ModelResponse{}, nil
	}
	for _, sz := range adapttest.BenchSizes {
		i := 0
		request := func() *ai.ModelRequest {
			i++
			return &ai.ModelRequest{Messages: []*ai.Message{{Role: ai.RoleTool, Content: []*ai.Part{
				ai.NewToolResponsePart(&ai.ToolResponse{Name: "t", Ref: "1", Output: adapttest.Payload(i, sz.Size)})}}}}
		}
		b.Run(sz.Name+"/direct", func(b *testing.B) {
			b.SetBytes(int64(sz.Size))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = model(ctx, request(), nil)
			}
		})
		b.Run(sz.Name+"/middleware", func(b *testing.B) {
			env := adapttest.New(b, nil)
			h := hybridgenkit.Middleware(env.Off, nil)(model)
			b.SetBytes(int64(sz.Size))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = h(ctx, request(), nil)
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
