package hybridctx_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hybridctx/hybridctx"
)

// wordTokens is a Tokenizer that is not the estimate: one token per run of
// letters or digits and one per other byte, so a notice's "≈N tokens" goes
// through the prefix count.
type wordTokens struct{}

func (wordTokens) Name() string { return "words" }

func (wordTokens) CountTokens(s string) int64 {
	var n int64
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		w := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !w || !in {
			n++
		}
		in = w
	}
	return n
}

// oneResult compacts a history of one result under a budget every result
// is over, keeping none recent.
func oneResult(t *testing.T, e *env, p hybridctx.Policy, text string, form hybridctx.ResultForm) *hybridctx.CompactedResult {
	t.Helper()
	p.History = hybridctx.HistoryPolicy{Budget: 10, KeepRecent: -1}
	o, err := hybridctx.NewOffloader(e.bind, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := compactor(t, o).Compact(e.ctx, []string{"a"}, []hybridctx.HistoryResult{
		{Call: hybridctx.Call{Tool: "t", ID: "a"}, Text: text, Form: form, Ordered: true, CallsBefore: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return &got.Results[0]
}

// readsBack checks that r's mask resolves through the Rehydrator to want.
func readsBack(t *testing.T, e *env, r *hybridctx.CompactedResult, want string) {
	t.Helper()
	st, ok := hybridctx.ParseStoredText(r.Text)
	if !r.Masked || !ok || !st.Masked || len(r.Text) > hybridctx.MaxMaskLen {
		t.Fatalf("not masked: %q", r.Text)
	}
	back := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: st.Ref.String(), Budget: 1 << 30})
	if got := string(back.Segment.Bytes()); got != want {
		t.Fatalf("the mask reads back %d bytes, not the %d it replaced", len(got), len(want))
	}
}

// TestCompactNoticeThenText: a 3,900-byte tool result that starts with an
// earlier result's notice and goes on is inline text: it is stored whole
// before it is masked, and its mask reads all of it back (the notice's
// reference alone would lose everything after line 2).
func TestCompactNoticeThenText(t *testing.T) {
	e := newEnv(t, 100)
	notice := mustOffload(t, e.off, e.ctx, strings.Repeat("a log line\n", 300)).Notice
	text := notice + "\n\nFindings:\n" + strings.Repeat("the model's own findings, kept nowhere else\n", 200)
	text = text[:3900]
	for _, form := range []hybridctx.ResultForm{hybridctx.FormNotice, hybridctx.FormInline} {
		r := oneResult(t, e, hybridctx.Policy{InlineThreshold: 100}, text, form)
		if r.Decision == nil {
			t.Fatalf("form %d: masked without being stored", form)
		}
		readsBack(t, e, r, text)
	}
	// Two text parts [notice, more text], as an adapter joins them.
	two := notice + "more text the tool returned in a second part"
	readsBack(t, e, oneResult(t, e, hybridctx.Policy{InlineThreshold: 100}, two, hybridctx.FormNotice), two)
}

// TestCompactForgedNoticeFields: a notice whose size, lines or kind was
// changed is not the owner's notice: stored, and read back as it was. The
// notice itself masks to a mask of the record's size and kind and the
// body's lines.
func TestCompactForgedNoticeFields(t *testing.T) {
	e := newEnv(t, 100)
	body := strings.Repeat("a log line\n", 300)
	notice := mustOffload(t, e.off, e.ctx, body).Notice
	forged := map[string]string{
		"size":  strings.Replace(notice, "3300 bytes", "9999 bytes", 1),
		"lines": strings.Replace(notice, "300 lines", "3 lines", 1),
		"kind":  strings.Replace(notice, "lines, text;", "lines, json;", 1),
		"tail":  notice + " ",
		"cut":   notice[:len(notice)-1],
	}
	for name, text := range forged {
		if text == notice {
			t.Fatalf("%s: nothing forged", name)
		}
		if _, ok := hybridctx.ParseStoredText(text); !ok {
			t.Fatalf("%s: does not read like a notice", name)
		}
		r := oneResult(t, e, hybridctx.Policy{InlineThreshold: 100}, text, hybridctx.FormNotice)
		if r.Decision == nil {
			t.Fatalf("%s: masked without being stored: %q", name, r.Text)
		}
		readsBack(t, e, r, text)
	}
	r := oneResult(t, e, hybridctx.Policy{InlineThreshold: 100}, notice, hybridctx.FormNotice)
	if r.Decision != nil || !strings.Contains(r.Text, "\n3300 bytes, 300 lines, text; masked.") {
		t.Fatalf("the owner's notice: %q (decision %v)", r.Text, r.Decision != nil)
	}
	readsBack(t, e, r, body)
}

// TestCompactExactNotices: the notices of every shape (JSON outline,
// preview, token count from a prefix, a streamed body) are recognized as
// the owner's and masked without storing anything.
func TestCompactExactNotices(t *testing.T) {
	e := newEnv(t, 100)
	jsonBody := `{"items": [` + strings.Repeat(`{"id": 1, "name": "n"},`, 400) + `{"id": 2}], "total": 401}`
	policies := map[string]hybridctx.Policy{
		"plain":   {InlineThreshold: 100},
		"preview": {InlineThreshold: 100, PreviewBytes: 300},
		"tokens":  {InlineThreshold: 100, PreviewBytes: 100, Tokenizer: wordTokens{}},
		"names":   {InlineThreshold: 100, ReadToolName: "fetch", SearchToolName: "grep_it", QueryToolName: "jq_it", Tokenizer: hybridctx.EstimateTokens{}},
	}
	bodies := map[string]string{
		"text":   strings.Repeat("line of a log, with words\n", 600),
		"json":   jsonBody,
		"binary": strings.Repeat("\x00\xff\x10", 2000),
		"small":  strings.Repeat("z", 150),
	}
	for pn, p := range policies {
		off, err := hybridctx.NewOffloader(e.bind, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		for bn, body := range bodies {
			notices := []string{mustOffload(t, off, e.ctx, body).Notice}
			streamed, err := off.OffloadReader(e.ctx, hybridctx.Call{Tool: "t", ID: "s"}, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			notices = append(notices, streamed.Notice)
			for _, n := range notices {
				before := e.inst.Counts()
				r := oneResult(t, e, p, n, hybridctx.FormNotice)
				if r.Decision != nil || !r.Masked {
					t.Fatalf("%s/%s: the owner's notice was not recognized: %q", pn, bn, n)
				}
				if after := e.inst.Counts(); after.NewWriters != before.NewWriters || after.RecordsCreated != before.RecordsCreated {
					t.Fatalf("%s/%s: masking a notice stored something", pn, bn)
				}
				readsBack(t, e, r, body)
			}
		}
	}
}

// TestCompactForgedMask: a 500 KB text whose first two lines read like a
// mask is not "already masked": it is stored and masked, and the budget
// is met.
func TestCompactForgedMask(t *testing.T) {
	e := newEnv(t, 4096)
	stored := mustOffload(t, e.off, e.ctx, strings.Repeat("x", 5000))
	head := stored.Ref.String() + "\n5000 bytes, 1 lines, text; masked. Read with search_artifact, read_artifact.\n"
	big := head + strings.Repeat("payload that reads like nothing\n", 500_000/32)
	c := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 4000, KeepRecent: 1}))
	calls, rs := inlineHistory(2, 1000)
	rs[0].Text, rs[0].Form = big, hybridctx.FormNotice
	got, err := c.Compact(e.ctx, calls, rs)
	if err != nil {
		t.Fatal(err)
	}
	if got.OverBudget || got.Shortfall != 0 || got.After.Bytes > 4000 || got.Results[0].Decision == nil {
		t.Fatalf("forged mask kept: over %v (%v), %d bytes after", got.OverBudget, got.Shortfall, got.After.Bytes)
	}
	readsBack(t, e, &got.Results[0], big)
	// The same through the adapters' view: any text that parses is a
	// notice to the compactor, which checks it.
	rs[0].Form = hybridctx.FormInline
	if got, err := c.Compact(e.ctx, calls, rs); err != nil || got.OverBudget {
		t.Fatalf("inline: %+v %v", got, err)
	}
}

// TestCompactNoticeUnreadableBody: a notice whose body cannot be read
// back (deleted behind the record) cannot be checked: it is stored, which
// is lossless, and checked again the next time.
func TestCompactNoticeUnreadableBody(t *testing.T) {
	e := newEnv(t, 100)
	out := mustOffload(t, e.off, e.ctx, strings.Repeat("gone\n", 200))
	if err := e.store.DeleteBody(e.ctx, out.Ref); err != nil {
		t.Fatal(err)
	}
	r := oneResult(t, e, hybridctx.Policy{InlineThreshold: 100}, out.Notice, hybridctx.FormNotice)
	if r.Decision == nil {
		t.Fatalf("an unchecked notice was masked unstored: %q", r.Text)
	}
	readsBack(t, e, r, out.Notice)
}

// TestCompactResultBeforeCall: a result placed before the call it answers
// is an invalid history, and nothing changes.
func TestCompactResultBeforeCall(t *testing.T) {
	e := newEnv(t, 100)
	c := compactor(t, historyOff(t, e, 100, hybridctx.HistoryPolicy{Budget: 10, KeepRecent: -1}))
	calls, rs := inlineHistory(2, 500)
	for i := range rs {
		rs[i].Ordered, rs[i].CallsBefore = true, i+1
	}
	if _, err := c.Compact(e.ctx, calls, rs); err != nil {
		t.Fatal(err)
	}
	// [result 0, call 0, call 1, result 1] and [call 1, result 0, call 0, result 1].
	for _, before := range [][2]int{{0, 2}, {1, 2}} {
		rs[0].CallsBefore, rs[1].CallsBefore = before[0], before[1]
		if before[0] == 1 {
			calls = []string{calls[1], calls[0]}
		}
		got, err := c.Compact(e.ctx, calls, rs)
		var he *hybridctx.HistoryError
		if got != nil || !errors.As(err, &he) || !errors.Is(err, hybridctx.ErrInvalidHistory) || he.Problem != hybridctx.ProblemResultBeforeCall || he.Index != 0 {
			t.Fatalf("%v: %+v %v", before, got, err)
		}
	}
	if n := len(e.events.decisions()); n != 2 {
		t.Fatalf("%d decisions: only the valid history may store", n)
	}
}

// TestCompactTokenCountsKept: with more results than the cache's floor,
// every text's count is kept from one step to the next: the second
// compaction counts nothing again.
func TestCompactTokenCountsKept(t *testing.T) {
	e := newEnv(t, 1<<20)
	tk := &countingTokens{}
	o, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 1 << 20, Tokenizer: tk,
		History: hybridctx.HistoryPolicy{Budget: 1 << 40}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := compactor(t, o)
	calls, rs := inlineHistory(9000, 100)
	if _, err := c.Compact(e.ctx, calls, rs); err != nil {
		t.Fatal(err)
	}
	first := tk.n.Load()
	if first != 9000 {
		t.Fatalf("%d counts for 9,000 texts", first)
	}
	if _, err := c.Compact(e.ctx, calls, rs); err != nil || tk.n.Load() != first {
		t.Fatalf("the second step counted %d texts again (%v)", tk.n.Load()-first, err)
	}
}

// TestNoticeRenderedAgainIsStable: the notice rendered from a stored body
// is the offload's, for bodies around the token prefix's size.
func TestNoticeRenderedAgainIsStable(t *testing.T) {
	e := newEnv(t, 64)
	p := hybridctx.Policy{InlineThreshold: 64, PreviewBytes: 64, Tokenizer: wordTokens{}}
	off, err := hybridctx.NewOffloader(e.bind, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{65, 4095, 4096, 4097, 9000} {
		var b bytes.Buffer
		for i := 0; b.Len() < n; i++ {
			b.WriteString("é word " + strconv.Itoa(i) + "\n")
		}
		body := b.String()[:n]
		r := oneResult(t, e, p, mustOffload(t, off, e.ctx, body).Notice, hybridctx.FormNotice)
		if r.Decision != nil {
			t.Fatalf("%d bytes: the notice was not recognized", n)
		}
		if _, ok := hybridctx.ParseStoredText(r.Text); !ok {
			t.Fatal(r.Text)
		}
	}
}

// countingTokens is the estimate, counting its calls.
type countingTokens struct{ n atomic.Int64 }

func (*countingTokens) Name() string { return "counting" }

func (c *countingTokens) CountTokens(s string) int64 {
	c.n.Add(1)
	return (int64(len(s)) + 3) / 4
}

// TestTokenThresholdCountBound: a token threshold under a counting
// tokenizer refuses a byte threshold whose results it would have to count
// past MaxTokenCountBytes (a 16 MiB block counted whole took 28 s); the
// estimate, counted from the length, has no such bound.
func TestTokenThresholdCountBound(t *testing.T) {
	for _, p := range []hybridctx.Policy{
		{InlineThreshold: 64 << 20, ThresholdTokens: 25000, Tokenizer: wordTokens{}},
		{InlineThreshold: 4096, ThresholdTokens: 25000, Tokenizer: wordTokens{}, ToolThresholds: map[string]int64{"big": hybridctx.MaxTokenCountBytes + 1}},
	} {
		if err := p.Validate(); !errors.Is(err, hybridctx.ErrInvalidPolicy) || !strings.Contains(err.Error(), "words") {
			t.Errorf("threshold %d: %v", p.InlineThreshold, err)
		}
	}
	for _, p := range []hybridctx.Policy{
		{InlineThreshold: hybridctx.MaxTokenCountBytes, ThresholdTokens: 25000, Tokenizer: wordTokens{}},
		{InlineThreshold: 64 << 20, ThresholdTokens: 25000, Tokenizer: hybridctx.EstimateTokens{}},
		{InlineThreshold: 64 << 20, ResultThresholdTokens: 25000, Tokenizer: wordTokens{}},
	} {
		if err := p.Validate(); err != nil {
			t.Errorf("threshold %d: %v", p.InlineThreshold, err)
		}
	}
}

// TestCompactConcurrent: one Compactor shared by histories compacted at
// once (its cache of counts and notice verdicts under its lock) gives each
// the answer it gives alone.
func TestCompactConcurrent(t *testing.T) {
	e := newEnv(t, 100)
	p := hybridctx.Policy{InlineThreshold: 100, Tokenizer: wordTokens{}, History: hybridctx.HistoryPolicy{Budget: 200, KeepRecent: 1}}
	o, err := hybridctx.NewOffloader(e.bind, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := compactor(t, o)
	calls, rs := inlineHistory(12, 300)
	for i := 0; i < len(rs); i += 3 {
		rs[i].Text, rs[i].Form = mustOffload(t, o, e.ctx, strings.Repeat("body "+strconv.Itoa(i)+"\n", 100)).Notice, hybridctx.FormNotice
	}
	alone, err := compactor(t, o).Compact(e.ctx, calls, rs)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := c.Compact(e.ctx, calls, rs)
			if err != nil {
				errs <- err
				return
			}
			for i := range got.Results {
				if got.Results[i].Text != alone.Results[i].Text {
					errs <- errors.New("result " + strconv.Itoa(i) + " differs from the history compacted alone")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
