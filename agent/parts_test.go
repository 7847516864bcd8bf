package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

func TestDecidePartsWholeResultBound(t *testing.T) {
	e := newEnv(t, 64, 0) // result bound 4 × 64 = 256
	parts := []any{strings.Repeat("a", 60), strings.Repeat("b", 63), "c", strings.Repeat("d", 62), strings.Repeat("e", 64), strings.Repeat("f", 500)}
	out, err := e.MW.DecideParts(context.Background(), hybridctx.Call{Tool: "t", ID: "c1"}, parts)
	if err != nil {
		t.Fatal(err)
	}
	var inline int64
	stored := map[int]bool{}
	for i, d := range out {
		switch d.Outcome() {
		case hybridctx.Inline:
			if d.Text() != parts[i] {
				t.Fatalf("part %d changed", i)
			}
			inline += int64(len(d.Text()))
		case hybridctx.Offloaded:
			stored[i] = true
		default:
			t.Fatalf("part %d: %v", i, d.Outcome())
		}
	}
	// 60+63+1+62+64 = 250 fits once the 500-byte part is stored per part.
	if inline > 256 || len(stored) != 1 || !stored[5] {
		t.Fatalf("inline %d, stored %v", inline, stored)
	}
	// One more part past the bound: the largest inline one (e, 64) goes.
	parts = append(parts, strings.Repeat("g", 10))
	out, err = e.MW.DecideParts(context.Background(), hybridctx.Call{Tool: "t", ID: "c2"}, parts)
	if err != nil {
		t.Fatal(err)
	}
	if out[4].Outcome() != hybridctx.Offloaded || out[1].Outcome() != hybridctx.Inline || out[5].Outcome() != hybridctx.ExistingReference {
		t.Fatalf("got %v %v %v", out[4].Outcome(), out[1].Outcome(), out[5].Outcome())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.MW.DecideParts(ctx, hybridctx.Call{}, parts); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
