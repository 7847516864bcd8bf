package hybridctx_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

func TestResultBoundPolicy(t *testing.T) {
	if got := (hybridctx.Policy{InlineThreshold: 100}).ResultBound(); got != 400 {
		t.Fatalf("default bound %d", got)
	}
	if got := (hybridctx.Policy{InlineThreshold: 100, ResultThreshold: 150}).ResultBound(); got != 150 {
		t.Fatalf("set bound %d", got)
	}
	if got := (hybridctx.Policy{InlineThreshold: 1 << 62}).ResultBound(); got <= 0 {
		t.Fatalf("overflowing bound %d", got)
	}
	if err := (hybridctx.Policy{InlineThreshold: 1, ResultThreshold: -1}).Validate(); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
		t.Fatalf("negative result threshold: %v", err)
	}
}

func TestStoreStoresSmallResults(t *testing.T) {
	off := newEnv(t, 1000).off
	out, err := off.Store(context.Background(), hybridctx.Call{Tool: "t", ID: "1"}, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if out.Outcome() != hybridctx.Offloaded || out.Ref.IsZero() {
		t.Fatalf("Store of a small result: %v", out.Outcome())
	}
	again, err := off.Store(context.Background(), hybridctx.Call{Tool: "t", ID: "2"}, []byte("tiny"))
	if err != nil || again.Outcome() != hybridctx.ExistingReference || again.Ref != out.Ref {
		t.Fatalf("second Store: %v %v", again.Outcome(), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := off.Store(ctx, hybridctx.Call{}, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Store: %v", err)
	}
}

// TestResultBoundTokens: the token form of the whole-result bound applies
// as the most bytes that cannot hold more tokens (4 × under the estimate,
// 1 × under a BPE encoding), the smaller of it and the byte bound wins,
// and it needs a tokenizer and a count >= 0.
func TestResultBoundTokens(t *testing.T) {
	for _, c := range []struct {
		p    hybridctx.Policy
		want int64
	}{
		{hybridctx.Policy{InlineThreshold: 100_000, ResultThresholdTokens: 25_000, Tokenizer: hybridctx.EstimateTokens{}}, 100_000},
		{hybridctx.Policy{InlineThreshold: 100_000, ResultThresholdTokens: 25_000, Tokenizer: o200k}, 25_000},
		{hybridctx.Policy{InlineThreshold: 1000, ResultThresholdTokens: 25_000, Tokenizer: o200k}, 4000},
		{hybridctx.Policy{InlineThreshold: 1000, ResultThreshold: 3000, ResultThresholdTokens: 500, Tokenizer: hybridctx.EstimateTokens{}}, 2000},
		{hybridctx.Policy{InlineThreshold: 1 << 30, ResultThreshold: 1 << 62, ResultThresholdTokens: 1 << 62, Tokenizer: hybridctx.EstimateTokens{}}, 1 << 62},
		{hybridctx.Policy{InlineThreshold: 1000, Tokenizer: o200k}, 4000},
	} {
		if err := c.p.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := c.p.ResultBound(); got != c.want {
			t.Errorf("%d tokens under %s, %d bytes: bound %d, want %d", c.p.ResultThresholdTokens, c.p.Tokenizer.Name(), c.p.ResultThreshold, got, c.want)
		}
	}
	for _, p := range []hybridctx.Policy{
		{InlineThreshold: 1, ResultThresholdTokens: 10},
		{InlineThreshold: 1, ResultThresholdTokens: -1, Tokenizer: o200k},
	} {
		if err := p.Validate(); !errors.Is(err, hybridctx.ErrInvalidPolicy) || !strings.Contains(err.Error(), "result token threshold") {
			t.Errorf("%+v: %v", p, err)
		}
	}
}
