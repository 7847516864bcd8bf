package bpe_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/tokenizer/bpe"
)

func TestCounts(t *testing.T) {
	// Reference counts from OpenAI's tiktoken for the same strings.
	for _, tc := range []struct {
		enc  string
		text string
		want int64
	}{
		{bpe.Cl100kBase, "hello world", 2},
		{bpe.O200kBase, "hello world", 2},
		{bpe.Cl100kBase, "", 0},
	} {
		tk, err := bpe.New(tc.enc)
		if err != nil {
			t.Fatal(err)
		}
		if got := tk.CountTokens(tc.text); got != tc.want || tk.Name() != tc.enc {
			t.Errorf("%s %q: %d tokens, want %d", tc.enc, tc.text, got, tc.want)
		}
	}
	if _, err := bpe.New("p50k_base"); !errors.Is(err, bpe.ErrUnknownEncoding) {
		t.Fatal(err)
	}
}

func TestConcurrentAndInvalidUTF8(t *testing.T) {
	tk, _ := bpe.New(bpe.O200kBase)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n := tk.CountTokens(strings.Repeat("log line 42\n", 100)); n <= 0 {
				t.Error("no tokens")
			}
		}()
	}
	wg.Wait()
	if n := tk.CountTokens("\xff\xfe binary"); n <= 0 {
		t.Fatal("invalid UTF-8 counts nothing")
	}
}

// The token threshold and the token budget with both built-in tokenizers:
// a result within its byte threshold but over its token bound is stored.
func TestTokenThresholds(t *testing.T) {
	o200, _ := bpe.New(bpe.O200kBase)
	for _, tk := range []hybridctx.Tokenizer{hybridctx.EstimateTokens{}, o200} {
		e := newEnv(t, hybridctx.Policy{InlineThreshold: 1 << 20, Tokenizer: tk, ThresholdTokens: 100})
		text := strings.Repeat("word ", 200) // 1000 bytes: ~200 tokens either way
		out, err := e.off.Offload(e.ctx, hybridctx.Call{Tool: "t", ID: "1"}, text)
		if err != nil || out.Outcome() != hybridctx.Offloaded {
			t.Fatalf("%s: %v %v", tk.Name(), out.Outcome(), err)
		}
		out, err = e.off.Offload(e.ctx, hybridctx.Call{Tool: "t", ID: "2"}, "word word word")
		if err != nil || out.Outcome() != hybridctx.Inline {
			t.Fatalf("%s small: %v %v", tk.Name(), out.Outcome(), err)
		}
	}
}

func TestTokenThresholdStream(t *testing.T) {
	e := newEnv(t, hybridctx.Policy{InlineThreshold: 1 << 20, Tokenizer: hybridctx.EstimateTokens{}, ThresholdTokens: 10})
	out, err := e.off.OffloadReader(e.ctx, hybridctx.Call{Tool: "t", ID: "1"}, strings.NewReader(strings.Repeat("x", 100)))
	if err != nil || out.Outcome() != hybridctx.Offloaded || out.Consumed != 100 {
		t.Fatalf("%v %v", out.Outcome(), err)
	}
	out, err = e.off.OffloadReader(e.ctx, hybridctx.Call{Tool: "t", ID: "2"}, strings.NewReader("tiny"))
	if err != nil || out.Outcome() != hybridctx.Inline {
		t.Fatalf("%v %v", out.Outcome(), err)
	}
	none, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, nil)
	off, _ := hybridctx.NewOffloader(none, hybridctx.Policy{InlineThreshold: 1 << 20, Tokenizer: hybridctx.EstimateTokens{}, ThresholdTokens: 10}, nil)
	out, err = off.OffloadReader(e.ctx, hybridctx.Call{Tool: "t", ID: "3"}, strings.NewReader(strings.Repeat("x", 100)))
	if err != nil || out.Reason() != hybridctx.NoAuthorizedWorkspace {
		t.Fatalf("%v %v", out.Reason(), err)
	}
}

// The history budget in tokens: with a tokenizer the budget counts tokens.
func TestHistoryBudgetInTokens(t *testing.T) {
	o200, _ := bpe.New(bpe.Cl100kBase)
	for _, tk := range []hybridctx.Tokenizer{hybridctx.EstimateTokens{}, o200} {
		e := newEnv(t, hybridctx.Policy{InlineThreshold: 1 << 20, Tokenizer: tk, History: hybridctx.HistoryPolicy{Budget: 500, KeepRecent: 1}})
		c, _ := hybridctx.NewCompactor(e.off, nil)
		var calls []string
		var rs []hybridctx.HistoryResult
		for i := range 4 {
			id := string(rune('a' + i))
			calls = append(calls, id)
			rs = append(rs, hybridctx.HistoryResult{Call: hybridctx.Call{ID: id}, Text: strings.Repeat(id+" word ", 100), Form: hybridctx.FormInline})
		}
		// 4 × 700 bytes = 2800 bytes: over a 500-token budget by either
		// count, but under a budget of 2800 bytes were it in bytes.
		got, err := c.Compact(e.ctx, calls, rs)
		if err != nil || !got.Stepped || got.Before.Tokens != 4*tk.CountTokens(rs[0].Text) || got.After.Tokens > 500 || got.Masked != 3 || got.OverBudget {
			t.Fatalf("%s: %+v %v", tk.Name(), got, err)
		}
	}
}
