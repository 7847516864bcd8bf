package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
)

func TestDecidePartsWholeResultBound(t *testing.T) {
	e := newEnv(t, 1000, 0) // result bound 4 × 1,000 = 4,000
	parts := []any{strings.Repeat("a", 900), strings.Repeat("b", 950), "c", strings.Repeat("d", 800), strings.Repeat("f", 5000)}
	res, err := e.MW.DecideParts(context.Background(), hybridctx.Call{Tool: "t", ID: "c1"}, parts)
	if err != nil {
		t.Fatal(err)
	}
	sent := func(res *agent.Parts) (n int) {
		for _, s := range res.Texts() {
			b, _ := json.Marshal(s)
			n += len(b) + 1
		}
		return n
	}
	for i, d := range res.Parts {
		if want := hybridctx.Inline; i == 4 && d.Outcome() != hybridctx.Offloaded || i < 4 && (d.Outcome() != want || d.Text() != parts[i]) {
			t.Fatalf("part %d: %v", i, d.Outcome())
		}
	}
	if n := sent(res); n > 4000 {
		t.Fatalf("%d bytes sent", n)
	}
	// One more part past the bound: the largest inline one (e, 990) goes.
	parts = append(parts, strings.Repeat("e", 990))
	res, err = e.MW.DecideParts(context.Background(), hybridctx.Call{Tool: "t", ID: "c2"}, parts)
	if err != nil {
		t.Fatal(err)
	}
	out := res.Parts
	if res.Whole != nil || out[5].Outcome() != hybridctx.Offloaded || out[1].Outcome() != hybridctx.Inline || out[4].Outcome() != hybridctx.ExistingReference {
		t.Fatalf("got %v %v %v", out[5].Outcome(), out[1].Outcome(), out[4].Outcome())
	}
	if n := sent(res); n > 4000 {
		t.Fatalf("%d bytes sent", n)
	}
	// Escapes count: 1,000 bytes of \x01 are 6,000 as a JSON string.
	res, err = e.MW.DecideParts(context.Background(), hybridctx.Call{Tool: "t", ID: "c3"}, []any{strings.Repeat("\x01", 1000)})
	if err != nil || res.Parts[0].Outcome() != hybridctx.Offloaded || sent(res) > 4000+hybridctx.ResultSlack {
		t.Fatalf("%v %v", err, res.Parts[0].Outcome())
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
