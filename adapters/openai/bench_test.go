package openai_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	hybridopenai "github.com/hybridctx/hybridctx/adapters/openai"
)

// BenchmarkToolCall compares answering a function tool call directly (run
// the tool, build the tool message) with Handler.HandleChat, for a result
// kept inline and one offloaded (fresh content every call). SHA-256 of the
// same bytes is the yardstick.
func BenchmarkToolCall(b *testing.B) {
	ctx := context.Background()
	for _, sz := range adapttest.BenchSizes {
		i := 0
		run := func(context.Context, string, json.RawMessage) (string, error) {
			i++
			return adapttest.Payload(i, sz.Size), nil
		}
		call := sdk.ChatCompletionMessageFunctionToolCall{ID: "call_1",
			Function: sdk.ChatCompletionMessageFunctionToolCallFunction{Name: "t", Arguments: `{}`}}
		b.Run(sz.Name+"/direct", func(b *testing.B) {
			b.SetBytes(int64(sz.Size))
			b.ReportAllocs()
			for b.Loop() {
				text, _ := run(ctx, call.Function.Name, json.RawMessage(call.Function.Arguments))
				_ = sdk.ToolMessage(text, call.ID)
			}
		})
		b.Run(sz.Name+"/handler", func(b *testing.B) {
			env := adapttest.New(b, nil)
			h, _ := hybridopenai.New(env.Off, env.Reh, nil)
			b.SetBytes(int64(sz.Size))
			b.ReportAllocs()
			for b.Loop() {
				_ = h.HandleChat(ctx, call, run)
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
