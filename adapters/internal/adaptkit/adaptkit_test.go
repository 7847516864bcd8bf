package adaptkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	"github.com/hybridctx/hybridctx/readtools"
)

func TestDecide(t *testing.T) {
	env := adapttest.New(t, nil)
	ctx := context.Background()
	call := hybridctx.Call{Tool: "t", ID: "1"}
	small, err := adaptkit.Decide(ctx, env.Off, call, "ok")
	if err != nil || small.Text != "ok" || small.IsError || small.Offload.Outcome() != hybridctx.Inline {
		t.Fatalf("inline: %+v, %v", small, err)
	}
	big, err := adaptkit.Decide(ctx, env.Off, call, adapttest.Body())
	if err != nil || big.IsError || len(big.Text) > hybridctx.MaxNoticeLen || big.Offload.Outcome() != hybridctx.Offloaded {
		t.Fatalf("stored: %.80q, %v", big.Text, err)
	}
	// A value encoding/json cannot encode is the categorical failure.
	bad, err := adaptkit.Decide(ctx, env.Off, call, make(chan int))
	if err != nil || bad != adaptkit.Failed() {
		t.Fatalf("unserializable: %+v, %v", bad, err)
	}
	// Without a workspace the decision fails with its categorical notice.
	off, _ := hybridctx.NewOffloader(nil, hybridctx.Policy{InlineThreshold: 16}, nil)
	failed, err := adaptkit.Decide(ctx, off, call, strings.Repeat("x", 100))
	if err != nil || !failed.IsError || !strings.HasPrefix(failed.Text, "hybridctx: failed") {
		t.Fatalf("no workspace: %+v, %v", failed, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := adaptkit.Decide(cancelled, env.Off, call, "ok"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestRawArgs(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{{nil, `{}`}, {"", `{}`}, {json.RawMessage(nil), `{}`}, {[]byte(nil), `{}`},
		{`{"a":1}`, `{"a":1}`}, {[]byte(`{"b":2}`), `{"b":2}`}, {map[string]int{"c": 3}, `{"c":3}`}, {make(chan int), `null`}} {
		if got := string(adaptkit.RawArgs(c.in)); got != c.want {
			t.Errorf("RawArgs(%T) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestReads(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: adapttest.Threshold, SearchToolName: "grep_result"})
	names := readtools.NamesOf(readtools.Names{Query: "jq_result"}.Over(env.Off.Policy()))
	if names != (readtools.Names{Read: hybridctx.DefaultReadToolName, Search: "grep_result", Query: "jq_result"}) {
		t.Fatalf("names %+v", names)
	}
	set, err := adaptkit.NewReads(env.Reh, names, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r, res := adaptkit.Read(context.Background(), set, "nope", nil); r != adaptkit.Failed() || res != nil {
		t.Fatalf("unknown tool: %+v", r)
	}
	r, res := adaptkit.Read(context.Background(), set, "grep_result", json.RawMessage(`{"reference":"`+adapttest.NeverStored+`","pattern":"x"}`))
	if !r.IsError || res == nil || r.Text != res.Text || !strings.HasPrefix(r.Text, "hybridctx: unauthorized") {
		t.Fatalf("refusal: %+v", r)
	}
	if _, err := adaptkit.NewReads(nil, names, 0); !errors.Is(err, adaptkit.ErrNilRehydrator) {
		t.Fatalf("nil rehydrator: %v", err)
	}
}
