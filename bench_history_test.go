package hybridctx_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
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
// offload: what a step costs beyond the offloads it makes. p99-ns is the
// 99th percentile of one call.
func BenchmarkCompactStep(b *testing.B) {
	for _, tc := range []struct {
		name   string
		budget int64
	}{{"under", 1 << 30}, {"notices", 1}} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b, 4096)
			calls, rs := historyOf500(b, e)
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
			c := compactor(b, historyOff(b, e, 4096, hybridctx.HistoryPolicy{Budget: tc.budget, KeepRecent: 3}))
			times := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if _, err := c.Compact(e.ctx, calls, rs); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(times)
			b.ReportMetric(float64(times[min(len(times)-1, len(times)*99/100)].Nanoseconds()), "p99-ns")
		})
	}
}
