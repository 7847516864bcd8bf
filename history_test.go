package hybridctx_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

// historyOff returns an offloader of e's binding under a history policy.
func historyOff(t testing.TB, e *env, threshold int64, h hybridctx.HistoryPolicy) *hybridctx.Offloader {
	t.Helper()
	o, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: threshold, History: h}, &hybridctx.OffloaderOptions{Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func compactor(t testing.TB, o *hybridctx.Offloader) *hybridctx.Compactor {
	t.Helper()
	c, err := hybridctx.NewCompactor(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// inlineHistory makes n inline results of size bytes each, all distinct.
func inlineHistory(n, size int) ([]string, []hybridctx.HistoryResult) {
	calls := make([]string, n)
	rs := make([]hybridctx.HistoryResult, n)
	for i := range n {
		calls[i] = fmt.Sprintf("call-%d", i)
		text := fmt.Sprintf("result %d\n", i) + strings.Repeat("x", size)
		rs[i] = hybridctx.HistoryResult{Call: hybridctx.Call{Tool: "t", ID: calls[i]}, Text: text[:size], Form: hybridctx.FormInline}
	}
	return calls, rs
}

// apply returns the results with their compacted texts and forms.
func apply(rs []hybridctx.HistoryResult, c *hybridctx.Compaction) []hybridctx.HistoryResult {
	out := append([]hybridctx.HistoryResult(nil), rs...)
	for i, r := range c.Results {
		if r.Masked {
			out[i].Text, out[i].Form, out[i].Ref = r.Text, r.Form, artifact.Ref{}
		}
	}
	return out
}

func TestCompactWatermarks(t *testing.T) {
	e := newEnv(t, 4096)
	c := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 10000, LowWater: 5000, KeepRecent: 1}))
	calls, rs := inlineHistory(11, 1000)
	// Ten results hold exactly the budget: nothing changes.
	got, err := c.Compact(e.ctx, calls[:10], rs[:10])
	if err != nil || got.Stepped || got.Masked != 0 || len(e.events.all()) != 0 {
		t.Fatalf("at the budget: %+v, %v", got, err)
	}
	// The eleventh takes it over: one step down to the low water mark.
	got, err = c.Compact(e.ctx, calls, rs)
	if err != nil || !got.Stepped || got.OverBudget {
		t.Fatalf("over the budget: %+v, %v", got, err)
	}
	if got.Before.Bytes != 11000 || got.After.Bytes > 5000 {
		t.Fatalf("bytes %d → %d, want ≤ 5000", got.Before.Bytes, got.After.Bytes)
	}
	masked, last := 0, len(rs)-1 // KeepRecent 1
	for i, r := range got.Results {
		if r.Masked != (i < last && i >= last-got.Masked) {
			t.Fatalf("result %d masked=%v: masking is newest first, below the recent ones", i, r.Masked)
		}
		if r.Masked {
			masked++
			if len(r.Text) > hybridctx.MaxMaskLen || !strings.HasPrefix(r.Text, r.Decision.Ref.String()+"\n") {
				t.Fatalf("mask %q", r.Text)
			}
			expect(t, r.Decision.Outcome(), r.Decision.Reason(), hybridctx.Offloaded, hybridctx.HistoryBudget)
		} else if r.Text != rs[i].Text {
			t.Fatal("an unmasked result changed")
		}
	}
	if ev := e.events.decisions(); len(ev) != masked || masked != 8 {
		t.Fatalf("%d events for %d masks, want 8", len(ev), masked)
	}
	for _, ev := range e.events.decisions() {
		if ev.Diagnostics.Reason() != hybridctx.HistoryBudget || ev.Diagnostics.Content() != hybridctx.ToolResult {
			t.Fatalf("event %v", ev.Diagnostics)
		}
	}
	// The prefix stays as it is until the next crossing.
	next := apply(rs, got)
	calls2, more := inlineHistory(13, 1000)
	next = append(next, more[11:]...)
	again, err := c.Compact(e.ctx, calls2, next)
	if err != nil || again.Stepped || again.Masked != 0 {
		t.Fatalf("between crossings: %+v, %v", again, err)
	}
}

func TestCompactKeepRecentAndExcluded(t *testing.T) {
	e := newEnv(t, 4096)
	c := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 1000, ExcludeTools: []string{"keep"}}))
	calls, rs := inlineHistory(8, 900)
	rs[1].Call.Tool = "keep"
	got, err := c.Compact(e.ctx, calls, rs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got.Results {
		want := i != 1 && i < 5 // the excluded one and the three most recent stay
		if r.Masked != want {
			t.Fatalf("result %d masked=%v, want %v", i, r.Masked, want)
		}
	}
	if !got.OverBudget || got.Shortfall != hybridctx.ShortExcluded {
		t.Fatalf("over budget %v, shortfall %v", got.OverBudget, got.Shortfall)
	}
	// A result the caller keeps counts like an excluded tool's.
	rs[1].Call.Tool, rs[1].Keep = "t", true
	if got, err := c.Compact(e.ctx, calls, rs); err != nil || got.Results[1].Masked || got.Shortfall != hybridctx.ShortExcluded {
		t.Fatalf("kept: %+v %v", got, err)
	}
	// Without an excluded tool, the recent results are what holds it over.
	rs[1].Keep = false
	got, err = c.Compact(e.ctx, calls, rs)
	if err != nil || !got.OverBudget || got.Shortfall != hybridctx.ShortKeepRecent || got.Masked != 5 {
		t.Fatalf("keep recent: %+v, %v", got, err)
	}
	// A budget too small for the masks of every result.
	few := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 500, KeepRecent: -1}))
	calls, rs = inlineHistory(10, 400)
	got2, err := few.Compact(e.ctx, calls, rs)
	if err != nil || got2.Masked != 10 || !got2.OverBudget || got2.Shortfall != hybridctx.ShortMasks || got2.Shortfall.String() != "masks_over_budget" {
		t.Fatalf("masks over budget: %+v, %v", got2, err)
	}
	b, _ := got.Shortfall.MarshalText()
	if string(b) != "keep_recent" || hybridctx.Shortfall(9).String() != "shortfall(9)" {
		t.Fatalf("shortfall name %q", b)
	}
}

func TestCompactNoticeAndRecovered(t *testing.T) {
	e := newEnv(t, 100)
	big := strings.Repeat("line of a log\n", 100)
	stored := mustOffload(t, e.off, e.ctx, big)
	rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: stored.Ref.String(), Budget: 1 << 20, Offset: 14, Length: 700})
	n0 := len(e.events.all())
	c := compactor(t, historyOff(t, e, 100, hybridctx.HistoryPolicy{Budget: 100, KeepRecent: -1}))
	rs := []hybridctx.HistoryResult{
		{Call: hybridctx.Call{Tool: "t", ID: "a"}, Text: stored.Notice, Form: hybridctx.FormNotice},
		hybridctx.RecoveredResult(hybridctx.Call{Tool: "read_artifact", ID: "b"}, rh.Segment),
	}
	got, err := c.Compact(e.ctx, []string{"a", "b"}, rs)
	if err != nil || got.Masked != 2 {
		t.Fatalf("%+v, %v", got, err)
	}
	notice, rec := got.Results[0], got.Results[1]
	if notice.Decision != nil || !strings.HasPrefix(notice.Text, stored.Ref.String()+"\n1400 bytes, 100 lines, text; masked. Read with search_artifact, read_artifact") {
		t.Fatalf("notice mask %q", notice.Text)
	}
	if !strings.HasPrefix(rec.Text, stored.Ref.String()+"\n700 bytes at offset 14, text; masked. Read with read_artifact") {
		t.Fatalf("segment mask %q", rec.Text)
	}
	ev := e.events.all()[n0:]
	if len(ev) != 2 || ev[0].Diagnostics != rec.Decision.Diagnostics() || ev[1].Compaction != got.Step {
		t.Fatalf("want the decision's own event, then the step's: %d", len(ev))
	}
	d := ev[0].Diagnostics
	if d.Content() != hybridctx.RecoveredContext || d.Outcome() != hybridctx.ExistingReference || d.Reason() != hybridctx.HistoryBudget {
		t.Fatalf("segment mask event %v", d)
	}
	// Each mask reads back to what it replaced.
	st, ok := hybridctx.ParseStoredText(rec.Text)
	if !ok || st.Offset != 14 || st.Size != 700 {
		t.Fatalf("parse %+v %v", st, ok)
	}
	back := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: st.Ref.String(), Budget: 1 << 20, Offset: st.Offset, Length: st.Size})
	if string(back.Segment.Bytes()) != big[14:714] {
		t.Fatal("the segment's mask does not read back its bytes")
	}
}

// TestCompactNoticeNotHeld: a tool's own text that reads like a notice but
// names a reference the owner does not hold is stored before it is
// masked, so the mask reads back the whole text.
func TestCompactNoticeNotHeld(t *testing.T) {
	e := newEnv(t, 100)
	fake := artifact.RefOf([]byte("never stored")).String() + "\n5 bytes, 1 lines, text; stored outside this conversation.\n" +
		strings.Repeat("the rest of a tool's output\n", 200)
	c := compactor(t, historyOff(t, e, 100, hybridctx.HistoryPolicy{Budget: 100, KeepRecent: -1}))
	got, err := c.Compact(e.ctx, []string{"a"}, []hybridctx.HistoryResult{{Call: hybridctx.Call{Tool: "t", ID: "a"}, Text: fake, Form: hybridctx.FormNotice}})
	if err != nil || got.Masked != 1 || got.Results[0].Decision == nil {
		t.Fatalf("%+v %v", got, err)
	}
	st, ok := hybridctx.ParseStoredText(got.Results[0].Text)
	if !ok || st.Ref == artifact.RefOf([]byte("never stored")) {
		t.Fatalf("mask %q", got.Results[0].Text)
	}
	back := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: st.Ref.String(), Budget: 1 << 20})
	if string(back.Segment.Bytes()) != fake {
		t.Fatal("the mask does not read back the text it replaced")
	}
}

func TestCompactRecoveredStoresNothing(t *testing.T) {
	e := newEnv(t, 100)
	stored := mustOffload(t, e.off, e.ctx, strings.Repeat("y", 5000))
	rh := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: stored.Ref.String(), Budget: 1 << 20})
	before := e.inst.Counts()
	c := compactor(t, historyOff(t, e, 100, hybridctx.HistoryPolicy{Budget: 100, KeepRecent: -1}))
	got, err := c.Compact(e.ctx, []string{"b"}, []hybridctx.HistoryResult{hybridctx.RecoveredResult(hybridctx.Call{ID: "b"}, rh.Segment)})
	if err != nil || got.Masked != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	if after := e.inst.Counts(); after != before {
		t.Fatalf("masking a segment touched the store: %+v → %+v", before, after)
	}
}

func TestCompactPairingErrors(t *testing.T) {
	e := newEnv(t, 100)
	c := compactor(t, historyOff(t, e, 100, hybridctx.HistoryPolicy{Budget: 10}))
	calls, rs := inlineHistory(3, 500)
	r := func(id, text string, f hybridctx.ResultForm) hybridctx.HistoryResult {
		return hybridctx.HistoryResult{Call: hybridctx.Call{ID: id}, Text: text, Form: f}
	}
	cases := map[string]struct {
		calls   []string
		results []hybridctx.HistoryResult
		problem string
	}{
		"result without call": {calls[:2], rs, hybridctx.ProblemResultWithoutCall},
		"two results":         {calls, append(rs, rs[0]), hybridctx.ProblemTwoResults},
		"open call":           {append(calls, "x"), rs, hybridctx.ProblemOpenCall},
		"duplicate call":      {append(calls, "call-0"), rs, hybridctx.ProblemDuplicateCall},
		"not a notice":        {[]string{"a"}, []hybridctx.HistoryResult{r("a", "hello", hybridctx.FormNotice)}, hybridctx.ProblemNotANotice},
		"segment no source":   {[]string{"a"}, []hybridctx.HistoryResult{r("a", "hello", hybridctx.FormRecovered)}, hybridctx.ProblemBadSource},
		"bad form":            {[]string{"a"}, []hybridctx.HistoryResult{r("a", "hello", 9)}, hybridctx.ProblemBadForm},
	}
	for name, tc := range cases {
		got, err := c.Compact(e.ctx, tc.calls, tc.results)
		var he *hybridctx.HistoryError
		if got != nil || !errors.Is(err, hybridctx.ErrInvalidHistory) || !errors.As(err, &he) || he.Problem != tc.problem {
			t.Errorf("%s: %v, %v", name, got, err)
		}
		if err != nil && strings.Contains(err.Error(), "call-") {
			t.Errorf("%s: the error names a call id: %v", name, err)
		}
	}
	if n := len(e.events.all()); n != 0 {
		t.Fatalf("%d events for refused histories", n)
	}
}

func TestCompactFailedOffloadTriesNext(t *testing.T) {
	e := newEnv(t, 4096)
	c := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 2400, KeepRecent: 1}))
	calls, rs := inlineHistory(4, 1000)
	first := true
	e.hooks.NewWriter = func(context.Context) error {
		if first {
			first = false
			return errors.New("disk on fire /secret/path")
		}
		return nil
	}
	got, err := c.Compact(e.ctx, calls, rs)
	if err != nil {
		t.Fatal(err)
	}
	// Newest first: result 2's offload fails, 1 and 0 are masked.
	if !got.Results[2].Failed || got.Results[2].Text != rs[2].Text || !got.Results[1].Masked || !got.Results[0].Masked {
		t.Fatalf("results %+v", got.Results)
	}
	if got.Failed != 1 || got.OverBudget {
		t.Fatalf("failed %d, over %v", got.Failed, got.OverBudget)
	}
	// When the failure keeps it over the budget, the shortfall says so.
	e.hooks.NewWriter = func(context.Context) error { return errors.New("full") }
	calls, rs = inlineHistory(4, 999)
	got, err = c.Compact(e.ctx, calls, rs)
	if err != nil || !got.OverBudget || got.Shortfall != hybridctx.ShortOffloadFailed || got.Failed != 3 {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestCompactCancelled(t *testing.T) {
	e := newEnv(t, 4096)
	c := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 2000, KeepRecent: 1}))
	calls, rs := inlineHistory(4, 1000)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if got, err := c.Compact(ctx, calls, rs); got != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v %v", got, err)
	}
	// Cancelled while the first result is being stored: no compaction.
	ctx, cancel = context.WithCancel(e.ctx)
	defer cancel()
	e.hooks.NewWriter = func(context.Context) error { cancel(); return context.Canceled }
	if got, err := c.Compact(ctx, calls, rs); got != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled during: %v %v", got, err)
	}
}

func TestCompactIdempotentAndDeterministic(t *testing.T) {
	e := newEnv(t, 4096)
	c := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 3000}))
	calls, rs := inlineHistory(9, 1000)
	one, err := c.Compact(e.ctx, calls, rs)
	if err != nil {
		t.Fatal(err)
	}
	// A second history with the same results masks to the same bytes
	// (existing_reference this time).
	two, err := c.Compact(e.ctx, calls, rs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range one.Results {
		if one.Results[i].Text != two.Results[i].Text {
			t.Fatalf("result %d differs between runs", i)
		}
		if d := two.Results[i].Decision; d != nil && d.Outcome() != hybridctx.ExistingReference {
			t.Fatalf("second run %v", d.Outcome())
		}
	}
	n := len(e.events.decisions())
	again, err := c.Compact(e.ctx, calls, apply(rs, one))
	if err != nil || again.Masked != 0 || len(e.events.decisions()) != n {
		t.Fatalf("compacting a compacted history: %+v %v", again, err)
	}
	// Still over the budget, a step ran and masked nothing: its event says
	// the cached prefix was kept.
	if cs := e.events.compactions(); cs[len(cs)-1].Compaction != again.Step || again.Step.InvalidatesCachedPrefix() {
		t.Fatalf("last compaction event %v, want the step's, not invalidating", cs[len(cs)-1])
	}
}

func TestCompactPrivacy(t *testing.T) {
	e := newEnv(t, 4096)
	c := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 10, KeepRecent: -1}))
	secret := "SECRET-CONTENT " + strings.Repeat("z", 400)
	rs := []hybridctx.HistoryResult{{Call: hybridctx.Call{Tool: "SECRET-TOOL", ID: "SECRET-ID"}, Text: secret, Form: hybridctx.FormInline}}
	got, err := c.Compact(e.ctx, []string{"SECRET-ID"}, rs)
	if err != nil || got.Masked != 1 {
		t.Fatal(err)
	}
	if strings.Contains(got.Results[0].Text, "SECRET") || strings.Contains(fmt.Sprintf("%+v", got.Results[0].Decision.Diagnostics()), "SECRET") {
		t.Fatalf("mask carries private data: %q", got.Results[0].Text)
	}
}

func TestMaskBound(t *testing.T) {
	e := newEnv(t, 100)
	long := strings.Repeat("n", hybridctx.MaxReadToolNameLen)
	p := hybridctx.Policy{InlineThreshold: 100, ReadToolName: long, SearchToolName: long[:63] + "s", QueryToolName: long[:63] + "q",
		History: hybridctx.HistoryPolicy{Budget: 1, KeepRecent: -1}}
	o, err := hybridctx.NewOffloader(e.bind, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := compactor(t, o)
	rs := []hybridctx.HistoryResult{
		{Call: hybridctx.Call{ID: "a"}, Text: strings.Repeat("t", 1<<20), Form: hybridctx.FormInline},
		{Call: hybridctx.Call{ID: "b"}, Text: `{"a": [` + strings.Repeat("1,", 1000) + `1]}`, Form: hybridctx.FormInline},
		{Call: hybridctx.Call{ID: "c"}, Text: strings.Repeat("\xff", 1000), Form: hybridctx.FormInline},
	}
	got, err := c.Compact(e.ctx, []string{"a", "b", "c"}, rs)
	if err != nil || got.Masked != 3 {
		t.Fatalf("%+v %v", got, err)
	}
	for _, r := range got.Results {
		st, ok := hybridctx.ParseStoredText(r.Text)
		if len(r.Text) > hybridctx.MaxMaskLen || !ok || !st.Masked {
			t.Fatalf("mask of %d bytes: %q (%v)", len(r.Text), r.Text, ok)
		}
	}
}

func TestParseStoredText(t *testing.T) {
	ref := artifact.RefOf([]byte("abc")).String()
	for text, want := range map[string]bool{
		ref + "\n3 bytes, 1 lines, text; stored outside this conversation.":   true,
		ref + "\n3 bytes, 1 lines, json; masked. Read with query_artifact.":   true,
		ref + "\n3 bytes, 1 lines, binary":                                    true,
		ref + "\n3 bytes at offset 0, text; masked. Read with read_artifact.": true,
		ref + "\n3 bytes at offset 0, text; stored":                           false,
		ref + "\n3 bytes, 1 lines, texture":                                   false,
		ref + "\n3 bytes, x lines, text":                                      false,
		ref + "\nbytes, 1 lines, text":                                        false,
		ref + "\n3 bytes at offset x, text":                                   false,
		ref + "\n3 bytes, 1 lines; text":                                      false,
		ref + "\n3 bytes, 1 rows, text":                                       false,
		ref + "\n3 bits, 1 lines, text":                                       false,
		ref:                                                                   false,
		strings.ToUpper(ref) + "\n3 bytes, 1 lines, text":                     false,
		"hello": false,
	} {
		if _, ok := hybridctx.ParseStoredText(text); ok != want {
			t.Errorf("%q: %v, want %v", text, ok, want)
		}
	}
}

func TestHistoryPolicyValidate(t *testing.T) {
	bad := []hybridctx.HistoryPolicy{
		{Budget: -1}, {Budget: 10, LowWater: -1}, {Budget: 10, LowWater: 11},
		{LowWater: 5}, {KeepRecent: 2}, {ExcludeTools: []string{"x"}},
		{Budget: 10, ExcludeTools: []string{" "}},
	}
	for _, h := range bad {
		if err := (hybridctx.Policy{InlineThreshold: 1, History: h}).Validate(); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
			t.Errorf("%+v: %v", h, err)
		}
	}
	h := hybridctx.HistoryPolicy{Budget: 10}
	if err := (hybridctx.Policy{InlineThreshold: 1, History: h}).Validate(); err != nil || h.LowWaterMark() != 5 || h.Recent() != 3 {
		t.Fatalf("defaults: %v %d %d", err, h.LowWaterMark(), h.Recent())
	}
	if (hybridctx.HistoryPolicy{KeepRecent: -1}).Recent() != 0 || (hybridctx.HistoryPolicy{Budget: 9, LowWater: 4}).LowWaterMark() != 4 {
		t.Fatal("keep none, explicit low water")
	}
	for _, p := range []hybridctx.Policy{{InlineThreshold: 1, ThresholdTokens: 5}, {InlineThreshold: 1, ThresholdTokens: -1, Tokenizer: hybridctx.EstimateTokens{}}} {
		if err := p.Validate(); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
			t.Errorf("token threshold %d: %v", p.ThresholdTokens, err)
		}
	}
	if _, err := hybridctx.NewCompactor(nil, nil); !errors.Is(err, hybridctx.ErrNoHistoryOffloader) {
		t.Fatal(err)
	}
}

// recorder is a CompactionObserver.
type recorder struct{ steps []*hybridctx.Compaction }

func (r *recorder) ObserveCompaction(c *hybridctx.Compaction) { r.steps = append(r.steps, c) }

func TestCompactionObserverAndOff(t *testing.T) {
	e := newEnv(t, 4096)
	rec := &recorder{}
	c, err := hybridctx.NewCompactor(historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 2000}), &hybridctx.CompactorOptions{Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	calls, rs := inlineHistory(5, 1000)
	if _, err := c.Compact(e.ctx, calls, rs); err != nil || len(rec.steps) != 1 || rec.steps[0].Masked != 2 {
		t.Fatalf("%v %d", err, len(rec.steps))
	}
	// Without a budget nothing is ever masked, but pairing is still checked.
	off := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{}))
	if got, err := off.Compact(e.ctx, calls, rs); err != nil || got.Stepped || got.Masked != 0 {
		t.Fatalf("off: %+v %v", got, err)
	}
	if _, err := off.Compact(e.ctx, nil, rs); !errors.Is(err, hybridctx.ErrInvalidHistory) {
		t.Fatal(err)
	}
	if _, err := c.Compact(e.ctx, calls, rs); err != nil {
		t.Fatal(err)
	}
}
