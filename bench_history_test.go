package hybridctx_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/cputime"
)

// historyOf500 is a history of 500 results like the shared workload's at a
// 4 KiB threshold: about a third inline (1-4 KiB), the rest notices.
func historyOf500(b *testing.B, e *env) ([]string, []hybridctx.HistoryResult) {
	calls := make([]string, 500)
	rs := make([]hybridctx.HistoryResult, 500)
	for i := range rs {
		calls[i] = "call_" + strconv.Itoa(i)
		text := strconv.Itoa(i) + strings.Repeat(" log line\n", 100+i%300)
		r := hybridctx.HistoryResult{Call: hybridctx.Call{Tool: "fetch", ID: calls[i]}, Text: text, Form: hybridctx.FormInline}
		if i%3 != 0 {
			big := mustOffload(b, e.off, e.ctx, text+strings.Repeat("z", 4096))
			r.Text, r.Form = big.Notice, hybridctx.FormNotice
		}
		rs[i] = r
	}
	return calls, rs
}

// BenchmarkCompactStep measures one compaction of a 500-result history:
// "under" weighs it and changes nothing (the common case, before every
// model call); "notices" is a step that masks only notices, so it makes no
// offload: what a step costs beyond the offloads it makes; "notices-first"
// is that step by a new Compactor, which reads each notice's body once to
// check the notice (later steps remember it). p99-ns is the 99th percentile
// of one call. "inline-first" is a new Compactor's step that masks only
// inline results, each of them stored before: every mask finds its body
// (existing_reference), as on a step after a restart.
func BenchmarkCompactStep(b *testing.B) {
	for _, tc := range []struct {
		name   string
		budget int64
		fresh  bool
		inputs bool
	}{{"under", 1 << 30, false, false}, {"notices", 1, false, false}, {"notices-first", 1, true, false}, {"inline-first", 1, true, false}, {"inputs", 1 << 30, false, true}} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b, 4096)
			calls, rs := historyOf500(b, e)
			var out HistorySizes
			if tc.inputs {
				// A write-file agent: every third call wrote 8 KiB; the
				// history is as the previous call left it (inputs masked),
				// so each model call weighs them and masks nothing new.
				out = withInputs(b, e, calls, rs)
			}
			if tc.budget == 1 {
				var only []hybridctx.HistoryResult
				var ids []string
				for i, r := range rs {
					if (r.Form == hybridctx.FormNotice) != (tc.name == "inline-first") {
						only, ids = append(only, r), append(ids, calls[i])
					}
				}
				rs, calls = only, ids
			}
			c := compactor(b, historyOff(b, e, 4096, hybridctx.HistoryPolicy{Budget: tc.budget, KeepRecent: 3, MaskInputs: tc.inputs}))
			if tc.name == "inline-first" {
				if _, err := c.Compact(e.ctx, calls, rs); err != nil { // stores each body
					b.Fatal(err)
				}
			}
			times := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cputime.Used()
			for range b.N {
				start := time.Now()
				if tc.fresh {
					c = compactor(b, c.Offloader())
				}
				if _, err := c.Compact(e.ctx, calls, rs); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			b.StopTimer()
			b.ReportMetric(float64(cputime.Used()-cpu)/float64(b.N), "cpu-ns/op")
			slices.Sort(times)
			b.ReportMetric(float64(times[min(len(times)-1, len(times)*99/100)].Nanoseconds()), "p99-ns")
			if tc.inputs {
				b.ReportMetric(float64(out.Before.InputBytes), "input-bytes")
				b.ReportMetric(float64(out.After.InputBytes), "input-bytes-masked")
			}
		})
	}
}

// BenchmarkCompactManyResults weighs a history of 9,000 distinct results
// (about 300 bytes each) under o200k_base, within its budget, as before
// every model call of a long run: every text's count is remembered from
// the previous call, so a call costs hashing, not counting.
func BenchmarkCompactManyResults(b *testing.B) {
	e := newEnv(b, 1<<20)
	o, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 1 << 20, Tokenizer: o200k,
		History: hybridctx.HistoryPolicy{Budget: 1 << 40}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := compactor(b, o)
	calls, rs := inlineHistory(9000, 300)
	if _, err := c.Compact(e.ctx, calls, rs); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Compact(e.ctx, calls, rs); err != nil {
			b.Fatal(err)
		}
	}
}

// withInputs gives each result of rs its call's arguments, every third a
// file write of 8 KiB, and masks them once as MaskInputs would.
func withInputs(b *testing.B, e *env, calls []string, rs []hybridctx.HistoryResult) HistorySizes {
	b.Helper()
	for i := range rs {
		content := strings.Repeat(fmt.Sprintf("line %d of file %d\n", i, i), 10)
		if i%3 == 0 {
			content = strings.Repeat(content, 8192/len(content)+1)
		}
		q, _ := json.Marshal(content)
		rs[i].Input = `{"path": "src/f` + strconv.Itoa(i) + `.go", "content": ` + string(q) + `}`
	}
	c := compactor(b, historyOff(b, e, 4096, hybridctx.HistoryPolicy{Budget: 1 << 30, MaskInputs: true}))
	got, err := c.Compact(e.ctx, calls, rs)
	if err != nil || got.InputsMasked != (len(rs)+2)/3 {
		b.Fatalf("%+v, %v", got.InputsMasked, err)
	}
	for i, r := range got.Results {
		rs[i].Input = r.Input
	}
	return HistorySizes{got.Before, got.After}
}

// HistorySizes is a compaction's sizes before and after.
type HistorySizes struct{ Before, After hybridctx.HistorySize }
