package langchaingo_test

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	hybridlc "github.com/hybridctx/hybridctx/adapters/langchaingo"
)

// counterTool returns fresh content of one size on every call.
type counterTool struct {
	i, size *int
}

func (t counterTool) Name() string        { return "t" }
func (t counterTool) Description() string { return "t" }
func (t counterTool) Call(context.Context, string) (string, error) {
	*t.i++
	return adapttest.Payload(*t.i, *t.size), nil
}

// BenchmarkToolCall compares calling a tool directly with calling it
// through Wrap, for a result kept inline and one offloaded (fresh content
// every call). SHA-256 of the same bytes is the yardstick.
func BenchmarkToolCall(b *testing.B) {
	ctx := context.Background()
	for _, sz := range adapttest.BenchSizes {
		i, size := 0, sz.Size
		tool := counterTool{i: &i, size: &size}
		b.Run(sz.Name+"/direct", func(b *testing.B) {
			b.SetBytes(int64(sz.Size))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = tool.Call(ctx, "{}")
			}
		})
		b.Run(sz.Name+"/wrapped", func(b *testing.B) {
			env := adapttest.New(b, nil)
			w := hybridlc.Wrap(tool, env.Off)
			b.SetBytes(int64(sz.Size))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = w.Call(ctx, "{}")
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
