package adaptkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
)

// BenchmarkCompactTextsInputs is the cost of one compaction before a model
// call of a 500-call write-file history (every third call writes 10 KiB)
// whose inputs are already masked: nothing new to mask, every input weighed
// again. args gives the arguments as JSON text (OpenAI, Eino, langchaingo),
// value as maps (Anthropic, Genkit), which are encoded at each step.
func BenchmarkCompactTextsInputs(b *testing.B) {
	content := adapttest.FileContent()
	for _, form := range []string{"args", "value"} {
		b.Run(form, func(b *testing.B) {
			env := adapttest.New(b, adapttest.InputsPolicy())
			ctx := context.Background()
			var calls []adaptkit.ToolCall
			var results []adaptkit.ToolText
			for i := range 500 {
				args := fmt.Sprintf(`{"path":"notes/%d.txt"}`, i)
				if i%3 == 0 {
					args = adapttest.WriteFileArgs(content)
				}
				tc := adaptkit.ToolCall{ID: fmt.Sprint(i), Tool: adapttest.WriteTool, Args: args}
				if form == "value" {
					var m map[string]any
					if err := json.Unmarshal([]byte(args), &m); err != nil {
						b.Fatal(err)
					}
					tc = adaptkit.ToolCall{ID: tc.ID, Tool: tc.Tool, Value: m}
				}
				calls = append(calls, tc)
				results = append(results, adaptkit.ToolText{CallID: tc.ID, Text: "written", CallsBefore: i + 1})
			}
			c := adaptkit.NewCompactor(env.Off, nil)
			notRead := func(string) bool { return false }
			res, err := adaptkit.CompactTexts(ctx, c, notRead, calls, results)
			if err != nil || res == nil {
				b.Fatalf("nothing masked: %v", err)
			}
			for k, a := range res.Calls {
				if a.Changed {
					calls[k].Args, calls[k].Value = a.Args, a.Value
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if res, err := adaptkit.CompactTexts(ctx, c, notRead, calls, results); err != nil || res != nil {
					b.Fatalf("a masked history changed: %v", err)
				}
			}
		})
	}
}
