package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

func TestDecidePartsWholeResultBound(t *testing.T) {
	e := newEnv(t, 64, 0) // result bound 4 × 64 = 256
	parts := []any{strings.Repeat("a", 60), strings.Repeat("b", 63), "c", strings.Repeat("d", 62), strings.Repeat("e", 64), strings.Repeat("f", 500)}
	res, err := e.MW.DecideParts(context.Background(), hybridctx.Call{Tool: "t", ID: "c1"}, parts)
	if err != nil {
		t.Fatal(err)
	}
	out := res.Parts
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
	res, err = e.MW.DecideParts(context.Background(), hybridctx.Call{Tool: "t", ID: "c2"}, parts)
	if err != nil {
		t.Fatal(err)
	}
	out = res.Parts
	if out[4].Outcome() != hybridctx.Offloaded || out[1].Outcome() != hybridctx.Inline || out[5].Outcome() != hybridctx.ExistingReference {
		t.Fatalf("got %v %v %v", out[4].Outcome(), out[1].Outcome(), out[5].Outcome())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.MW.DecideParts(ctx, hybridctx.Call{}, parts); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// A result of many parts whose notices alone are over the bound is stored
// whole: one notice, and .[i] reads part i back.
func TestDecidePartsStoredWhole(t *testing.T) {
	e := newEnv(t, 1000, 0) // result bound 4,000
	var parts []any
	for i := range 40 {
		parts = append(parts, fmt.Sprintf("part %03d ", i)+strings.Repeat("p", 900))
	}
	res, err := e.MW.DecideParts(context.Background(), hybridctx.Call{Tool: "t", ID: "w1"}, parts)
	if err != nil {
		t.Fatal(err)
	}
	texts := res.Texts()
	if res.Whole == nil || res.Whole.Outcome() != hybridctx.Offloaded || len(texts) != 1 ||
		!strings.Contains(texts[0], "40 content blocks (40 text)") || len(texts[0]) > hybridctx.MaxNoticeLen {
		t.Fatalf("not stored whole: %q", texts)
	}
	got, err := e.Reh.Query(context.Background(), hybridctx.QueryRequest{Reference: res.Whole.Ref.String(), Budget: 4096, Filter: ".[17].text"})
	if err != nil || got.Outcome() != hybridctx.Resolved {
		t.Fatalf("%v %v", err, got.Outcome())
	}
	if line, _, _ := strings.Cut(string(got.Segment.Bytes()), "\n"); line != `"`+parts[17].(string)+`"` {
		t.Fatalf("part 17 read back as %.60q", line)
	}
	// Few parts: no whole store.
	res, err = e.MW.DecideParts(context.Background(), hybridctx.Call{Tool: "t", ID: "w2"}, parts[:3])
	if err != nil || res.Whole != nil || len(res.Texts()) != 3 {
		t.Fatalf("%v %v", err, res.Texts())
	}
}
