package anthropic_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	hybridanthropic "github.com/hybridctx/hybridctx/adapters/anthropic"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
)

// BenchmarkToolCall compares answering a tool_use block directly (run the
// tool, build the tool_result) with Handler.Handle, for a result kept
// inline and one offloaded (fresh content every call). SHA-256 of the same
// bytes is the yardstick.
func BenchmarkToolCall(b *testing.B) {
	ctx := context.Background()
	for _, sz := range adapttest.BenchSizes {
		i := 0
		run := func(context.Context, string, json.RawMessage) (string, error) {
			i++
			return adapttest.Payload(i, sz.Size), nil
		}
		block := sdk.ToolUseBlock{ID: "toolu_1", Name: "t", Input: json.RawMessage(`{}`)}
		b.Run(sz.Name+"/direct", func(b *testing.B) {
			b.SetBytes(int64(sz.Size))
			b.ReportAllocs()
			for b.Loop() {
				text, _ := run(ctx, block.Name, block.Input)
				_ = sdk.NewToolResultBlock(block.ID, text, false)
			}
		})
		b.Run(sz.Name+"/handler", func(b *testing.B) {
			env := adapttest.New(b, nil)
			h, _ := hybridanthropic.New(env.Off, env.Reh, nil)
			b.SetBytes(int64(sz.Size))
			b.ReportAllocs()
			for b.Loop() {
				_ = h.Handle(ctx, block, run)
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
