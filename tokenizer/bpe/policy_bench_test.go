package bpe_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/cputime"
	"github.com/hybridctx/hybridctx/tokenizer/bpe"
)

// logText returns n bytes of log lines.
func logText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "2026-12-04T22:%02d:%02d.%03dZ INFO svc/handler.go:%d served GET /api/items/%d in %d ms\n", i/60%60, i%60, i*37%1000, 100+i%400, i*7919, i*13%900)
	}
	return b.String()[:n]
}

// BenchmarkThresholdTokens is the decision on one 16 KiB result within the
// byte threshold and over ThresholdTokens in bytes, so counted whole: with
// the estimate (no count) and with each encoding, the result a string or
// ("/bytes") a []byte.
func BenchmarkThresholdTokens(b *testing.B) {
	o200, _ := bpe.New(bpe.O200kBase)
	cl100, _ := bpe.New(bpe.Cl100kBase)
	for _, tk := range []hybridctx.Tokenizer{hybridctx.EstimateTokens{}, o200, cl100} {
		for _, form := range []string{"", "/bytes"} {
			b.Run(tk.Name()+form, func(b *testing.B) {
				e := newEnv(b, hybridctx.Policy{InlineThreshold: 1 << 20, Tokenizer: tk, ThresholdTokens: 8000})
				text := logText(16 << 10)
				var in any = text
				if form != "" {
					in = []byte(text)
				}
				tk.CountTokens("warm up")
				call := hybridctx.Call{Tool: "t", ID: "1"}
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				start := cputime.Used()
				for b.Loop() {
					out, err := e.off.Offload(e.ctx, call, in)
					if err != nil || out.Outcome() != hybridctx.Inline {
						b.Fatal(out.Outcome(), err)
					}
				}
				b.ReportMetric(float64((cputime.Used()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkCompactStepTokens is one compaction of a 500-result history
// (a third inline, 1-4 KiB; the rest notices) with the budget in o200k_base
// tokens: "under" weighs it and changes nothing, "notices" masks notices
// only; "fresh" builds a new compactor each time, so every result is
// counted (no counts cached). p50-ns and p99-ns are of one call.
func BenchmarkCompactStepTokens(b *testing.B) {
	tk, _ := bpe.New(bpe.O200kBase)
	for _, tc := range []struct {
		name   string
		budget int64
		fresh  bool
	}{{"under", 1 << 30, false}, {"under-fresh", 1 << 30, true}, {"notices", 1, false}} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b, hybridctx.Policy{InlineThreshold: 4096, Tokenizer: tk, History: hybridctx.HistoryPolicy{Budget: tc.budget, KeepRecent: 3}})
			calls := make([]string, 500)
			rs := make([]hybridctx.HistoryResult, 500)
			for i := range rs {
				calls[i] = "call_" + strconv.Itoa(i)
				text := strconv.Itoa(i) + strings.Repeat(" log line\n", 100+i%300)
				r := hybridctx.HistoryResult{Call: hybridctx.Call{Tool: "fetch", ID: calls[i]}, Text: text, Form: hybridctx.FormInline}
				if i%3 != 0 {
					big, err := e.off.Offload(e.ctx, r.Call, text+strings.Repeat("z", 4096))
					if err != nil {
						b.Fatal(err)
					}
					r.Text, r.Form = big.Notice, hybridctx.FormNotice
				}
				rs[i] = r
			}
			if tc.budget == 1 {
				var only []hybridctx.HistoryResult
				var ids []string
				for i, r := range rs {
					if r.Form == hybridctx.FormNotice {
						only, ids = append(only, r), append(ids, calls[i])
					}
				}
				rs, calls = only, ids
			}
			c, _ := hybridctx.NewCompactor(e.off, nil)
			times := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			cpu := cputime.Used()
			for b.Loop() {
				if tc.fresh {
					c, _ = hybridctx.NewCompactor(e.off, nil)
				}
				start := time.Now()
				if _, err := c.Compact(e.ctx, calls, rs); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			b.ReportMetric(float64((cputime.Used()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(times[min(len(times)-1, len(times)*99/100)].Nanoseconds()), "p99-ns")
		})
	}
}
