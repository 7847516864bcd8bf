package hybridctx_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
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

// FuzzCompactForged compacts random histories whose texts mix the owner's
// notices with forgeries of them (a notice that goes on, a notice with a
// digit or its kind changed, a mask-like text of any length, a mask that
// goes on) beside inline results and recovered segments, each given to the
// compactor as a notice when it reads like one, as the adapters do. Every
// mask must read back through the Rehydrator exactly what it replaced (the
// body, for the owner's own notice; the text itself, for anything else),
// a text must not change without a mask, a step short of the budget for
// want of masks must have left no text longer than a mask, and compacting
// the result again must change nothing.
func FuzzCompactForged(f *testing.F) {
	f.Add([]byte{1, 0, 0, 2, 0, 200, 3, 1, 3, 4, 0, 9, 5, 1, 40, 0, 2, 100}, uint16(300), uint8(0), uint8(0))
	f.Add([]byte{2, 1, 250, 4, 2, 255, 1, 2, 0}, uint16(10), uint8(2), uint8(1)) // a notice that goes on; a 500-line forged mask
	f.Add([]byte{3, 0, 1, 3, 0, 2, 3, 0, 3, 6, 1, 30}, uint16(1), uint8(0), uint8(2))
	f.Add([]byte{7, 0, 5, 7, 1, 5, 1, 1, 0, 0, 0, 255}, uint16(900), uint8(4), uint8(3))
	f.Fuzz(func(t *testing.T, spec []byte, budget uint16, keep, variant uint8) {
		if len(spec) > 60 {
			spec = spec[:60]
		}
		e := newEnv(t, 256)
		p := hybridctx.Policy{InlineThreshold: 256, History: hybridctx.HistoryPolicy{Budget: int64(budget) + 1, KeepRecent: int(keep%4) - 1}}
		switch variant % 4 {
		case 1:
			p.PreviewBytes = 120
		case 2:
			p.Tokenizer = hybridctx.EstimateTokens{}
		case 3:
			p.Tokenizer, p.PreviewBytes = wordTokens{}, 64
		}
		off, err := hybridctx.NewOffloader(e.bind, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := compactor(t, off)
		// Three stored bodies: text, JSON, and a text just over the token
		// prefix; their notices are the only texts that are notices.
		bodies := []string{
			strings.Repeat("a line of the stored log\n", 40),
			`{"rows": [` + strings.Repeat(`{"k": "v", "n": 12},`, 30) + `{"k": "w"}]}`,
			strings.Repeat("é words and 1234 numbers\n", 180),
		}
		bodyOf := map[string]string{} // notice → its body
		var notices []string
		for _, b := range bodies {
			n := mustOffload(t, off, e.ctx, b).Notice
			notices = append(notices, n)
			bodyOf[n] = b
		}
		var calls []string
		var rs []hybridctx.HistoryResult
		var want []string // what a mask of each result must read back
		for i := 0; i+2 < len(spec); i += 3 {
			id := "c" + strconv.Itoa(i)
			sel, arg := spec[i+1], int(spec[i+2])
			notice := notices[int(sel)%len(notices)]
			filler := strings.Repeat("text of result "+strconv.Itoa(i)+"\n", arg/4+1)
			var text string
			switch spec[i] % 8 {
			case 0:
				text = filler[:min(len(filler), arg*3)]
			case 1:
				text = notice
			case 2:
				text = notice + filler
			case 3: // one byte of the notice changed
				k := artifact.RefLen + 1 + arg%(len(notice)-artifact.RefLen-1)
				text = notice[:k] + string(rune('0'+arg%10)) + notice[k+1:]
			case 4, 5: // a mask-like text, alone or going on
				ref := notice[:artifact.RefLen]
				text = ref + "\n" + strconv.Itoa(arg) + " bytes, " + strconv.Itoa(arg%7) + " lines, text; masked. Read with read_artifact."
				if spec[i]%8 == 5 {
					text += "\n" + strings.Repeat(filler, 1+arg%5)
				}
			case 6:
				text = strings.Replace(notice, "lines, text", "lines, json", 1)
			case 7:
				text = notice[:len(notice)-1-arg%8]
			}
			r := hybridctx.HistoryResult{Call: hybridctx.Call{Tool: "t", ID: id}, Text: text, Form: hybridctx.FormInline,
				Ordered: true, CallsBefore: len(calls) + 1}
			if _, ok := hybridctx.ParseStoredText(text); ok {
				r.Form = hybridctx.FormNotice
			}
			w := text
			if b, ok := bodyOf[text]; ok {
				w = b
			}
			calls = append(calls, id)
			rs = append(rs, r)
			want = append(want, w)
		}
		got, err := c.Compact(e.ctx, calls, rs)
		if err != nil {
			t.Fatal(err)
		}
		if got.Failed != 0 {
			t.Fatalf("%d failed", got.Failed)
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
			back := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: st.Ref.String(), Budget: 1 << 20})
			if back.Segment == nil || string(back.Segment.Bytes()) != want[i] {
				t.Fatalf("result %d (%.100q): its mask does not read back what it replaced", i, rs[i].Text)
			}
			if st.Size != int64(len(want[i])) {
				t.Fatalf("result %d: mask says %d bytes, the body has %d", i, st.Size, len(want[i]))
			}
		}
		if got.OverBudget && got.Shortfall == hybridctx.ShortMasks {
			for i, r := range got.Results[:max(0, len(rs)-p.History.Recent())] {
				if len(r.Text) > hybridctx.MaxMaskLen {
					t.Fatalf("masks over budget, but result %d holds %d bytes", i, len(r.Text))
				}
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
