package hybridctx_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

// FuzzCompact compacts random histories (inline results, notices, recovered
// segments of random sizes, random budgets) and checks the invariants of the
// history budget: one result out per result in, every mask at most
// MaxMaskLen bytes and resolving through the Rehydrator to exactly the bytes
// it replaced, the budget met unless the step says why not, and a compacted
// history compacting to itself.
func FuzzCompact(f *testing.F) {
	f.Add([]byte{3, 40, 2, 0, 9, 1, 200, 2, 7, 50, 0, 3}, uint16(300), uint8(1))
	f.Add([]byte{0, 255, 255, 1, 1, 1, 2, 2, 2}, uint16(1), uint8(0))
	f.Add([]byte("a longer seed with many results of many sizes"), uint16(2000), uint8(3))
	f.Fuzz(func(t *testing.T, spec []byte, budget uint16, keep uint8) {
		if len(spec) > 96 {
			spec = spec[:96]
		}
		e := newEnv(t, 256)
		h := hybridctx.HistoryPolicy{Budget: int64(budget) + 1, KeepRecent: int(keep%5) - 1}
		c := compactor(t, historyOff(t, e, 256, h))
		var calls []string
		var rs []hybridctx.HistoryResult
		var orig []string // the bytes each result stands for
		for i := 0; i+2 < len(spec); i += 3 {
			id := "c" + strconv.Itoa(i)
			size := int(spec[i+1])*8 + int(spec[i+2])
			body := strings.Repeat(string(rune('a'+i%26))+strconv.Itoa(i)+"\n", size/3+1)[:size]
			r := hybridctx.HistoryResult{Call: hybridctx.Call{Tool: "t" + strconv.Itoa(int(spec[i]%3)), ID: id}, Text: body, Form: hybridctx.FormInline}
			want := body
			switch spec[i] % 3 {
			case 1:
				if size > 256 {
					r.Text, r.Form = mustOffload(t, e.off, e.ctx, body).Notice, hybridctx.FormNotice
				}
			case 2:
				if size > 0 {
					stored := mustOffload(t, e.off, e.ctx, body+strings.Repeat("#", 257))
					off := int64(spec[i+2]) % int64(size)
					rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: stored.Ref.String(), Budget: 1 << 20, Offset: off, Length: int64(size) - off})
					r = hybridctx.RecoveredResult(r.Call, rh.Segment)
					want = r.Text
				}
			}
			calls = append(calls, id)
			rs = append(rs, r)
			orig = append(orig, want)
		}
		got, err := c.Compact(e.ctx, calls, rs)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Results) != len(rs) || got.Failed != 0 {
			t.Fatalf("%d results for %d, %d failed", len(got.Results), len(rs), got.Failed)
		}
		if got.Stepped && !got.OverBudget && got.After.Bytes > h.Budget {
			t.Fatalf("after %d bytes, budget %d", got.After.Bytes, h.Budget)
		}
		if got.Stepped && got.After.Bytes > h.LowWaterMark() && !got.OverBudget {
			// Stopped above the low water mark: only when nothing else could go.
			for i, r := range got.Results[:max(0, len(rs)-h.Recent())] {
				st, ok := hybridctx.ParseStoredText(r.Text)
				if !(ok && st.Masked) && rs[i].Form == hybridctx.FormInline && len(rs[i].Text) > hybridctx.MaxMaskLen {
					t.Fatalf("result %d left inline above the low water mark", i)
				}
			}
		}
		for i, r := range got.Results {
			if !r.Masked {
				if r.Text != rs[i].Text {
					t.Fatalf("result %d changed without a mask", i)
				}
				continue
			}
			st, ok := hybridctx.ParseStoredText(r.Text)
			if len(r.Text) > hybridctx.MaxMaskLen || !ok || !st.Masked {
				t.Fatalf("mask %q", r.Text)
			}
			req := hybridctx.Request{Reference: st.Ref.String(), Budget: 1 << 20}
			if st.Offset >= 0 {
				req.Offset, req.Length = st.Offset, st.Size
			}
			back := mustRehydrate(t, e.reh, e.ctx, req)
			if back.Segment == nil || string(back.Segment.Bytes()) != orig[i] {
				t.Fatalf("mask %d does not resolve to its bytes", i)
			}
		}
		next := apply(rs, got)
		again, err := c.Compact(e.ctx, calls, next)
		if err != nil || again.Masked != 0 {
			t.Fatalf("compacting again masked %d: %v", again.Masked, err)
		}
		for i := range next {
			if again.Results[i].Text != next[i].Text {
				t.Fatalf("result %d changed on the second compaction", i)
			}
		}
	})
}
