package hybridctx_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

// writeCall is a history of one answered call whose input carries a long
// file content beside short fields, a number spelt as the model spelt it,
// and the content's key.
func writeCall(content string) ([]string, []hybridctx.HistoryResult) {
	q, _ := json.Marshal(content)
	input := `{"path": "src/a.go", "mode": 1.50e2, "content": ` + string(q) + `, "tags": ["x", {"content": "short"}]}`
	return []string{"c1"}, []hybridctx.HistoryResult{{Call: hybridctx.Call{Tool: "write_file", ID: "c1"},
		Text: "ok", Form: hybridctx.FormInline, Input: input}}
}

func TestCompactMaskInputs(t *testing.T) {
	e := newEnv(t, 1024)
	c := compactor(t, historyOff(t, e, 1024, hybridctx.HistoryPolicy{Budget: 1 << 20, MaskInputs: true}))
	content := strings.Repeat("package a // line\n", 400) + "<&>\u00e9"
	calls, rs := writeCall(content)
	got, err := c.Compact(e.ctx, calls, rs)
	if err != nil {
		t.Fatal(err)
	}
	r := got.Results[0]
	if got.Stepped || got.InputsMasked != 1 || len(r.InputDecisions) != 1 || r.Text != "ok" || r.Masked {
		t.Fatalf("compaction %+v, result %+v", got, r)
	}
	// Still JSON, of the same shape; only the long string changed, and
	// every other byte is as the model wrote it.
	var before, after map[string]any
	if err := json.Unmarshal([]byte(rs[0].Input), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(r.Input), &after); err != nil {
		t.Fatalf("masked input is not JSON: %v\n%s", err, r.Input)
	}
	mask, _ := after["content"].(string)
	before["content"] = mask
	if !reflect.DeepEqual(before, after) || !strings.HasPrefix(r.Input, `{"path": "src/a.go", "mode": 1.50e2, "content": "artifact://sha256/`) {
		t.Fatalf("shape changed:\n%s", r.Input)
	}
	st, ok := hybridctx.ParseStoredText(mask)
	if !ok || !st.Masked || len(mask) > hybridctx.MaxMaskLen {
		t.Fatalf("mask %q", mask)
	}
	expect(t, r.InputDecisions[0].Outcome(), r.InputDecisions[0].Reason(), hybridctx.Offloaded, hybridctx.HistoryBudget)
	if n := len(e.events.decisions()); n != 1 {
		t.Fatalf("%d decisions, want 1", n)
	}
	// Under the budget, no step ran, but an input was masked: one
	// compaction event says so, and the cached prefix is invalidated.
	if cs := e.events.compactions(); len(cs) != 1 || cs[0].Compaction.Stepped() || cs[0].Compaction.InputsMasked() != 1 ||
		!cs[0].Compaction.InvalidatesCachedPrefix() || cs[0].Compaction.ResultsMasked() != 0 {
		t.Fatalf("compaction events %v", cs)
	}
	back := mustRehydrate(t, e.reh, e.ctx, hybridctx.Request{Reference: st.Ref.String(), Budget: 1 << 20})
	if string(back.Segment.Bytes()) != content {
		t.Fatal("the masked string does not read back byte-exact")
	}
	in := int64(len(rs[0].Input))
	if got.Before.InputBytes != in || got.Before.Bytes != in+2 || got.After.InputBytes != int64(len(r.Input)) {
		t.Fatalf("sizes %+v → %+v", got.Before, got.After)
	}
	// Idempotent: the masked history compacts to itself, with no event (the
	// decision, the compaction and the read made three).
	rs[0].Input = r.Input
	again, err := c.Compact(e.ctx, calls, rs)
	if err != nil || again.InputsMasked != 0 || again.Results[0].Input != r.Input || len(e.events.all()) != 3 || again.Step != nil {
		t.Fatalf("again: %+v, %v", again, err)
	}
}

func TestCompactMaskInputsLeavesAlone(t *testing.T) {
	e := newEnv(t, 256)
	c := compactor(t, historyOff(t, e, 256, hybridctx.HistoryPolicy{Budget: 1 << 20, MaskInputs: true, ExcludeTools: []string{"keep"}}))
	long := strings.Repeat("y", 600)
	for name, input := range map[string]string{
		"short strings":          `{"a": "` + strings.Repeat("s", 200) + `", "b": 3}`,
		"a long key":             `{"` + long + `": 1}`,
		"not JSON":               `{"content": "` + long + `"`,
		"two values":             `{"content": "` + long + `"} {}`,
		"a lone surrogate":       `{"content": "` + long + `\udc00"}`,
		"invalid UTF-8 in place": "{\"content\": \"" + long + "\xff\"}",
		"no input":               ``,
	} {
		_, rs := writeCall("x")
		rs[0].Input = input
		got, err := c.Compact(e.ctx, []string{"c1"}, rs)
		if err != nil || got.InputsMasked != 0 || got.Results[0].Input != input {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
	calls, rs := writeCall(long)
	rs[0].Call.Tool = "keep"
	if got, err := c.Compact(e.ctx, calls, rs); err != nil || got.InputsMasked != 0 || got.Results[0].Input != rs[0].Input {
		t.Errorf("excluded tool: %+v, %v", got, err)
	}
	if ev := e.events.all(); len(ev) != 0 {
		for _, x := range ev {
			t.Logf("%+v", x)
		}
		t.Fatalf("%d events", len(ev))
	}
}

// The budget weighs inputs with results: a history whose results fit but
// whose inputs (kept, under MaskInputs off) take it over steps.
func TestCompactBudgetCountsInputs(t *testing.T) {
	e := newEnv(t, 4096)
	c := compactor(t, historyOff(t, e, 4096, hybridctx.HistoryPolicy{Budget: 4000, KeepRecent: 1}))
	calls, rs := inlineHistory(3, 1000)
	for i := range rs {
		rs[i].Input = `{"q": "` + strings.Repeat("z", 800) + `"}`
	}
	got, err := c.Compact(e.ctx, calls, rs)
	if err != nil || !got.Stepped || got.Masked == 0 || got.Before.InputBytes != 3*809 || got.InputsMasked != 0 {
		t.Fatalf("%+v, %v", got, err)
	}
}

func TestMaskInputsNeedsABudget(t *testing.T) {
	e := newEnv(t, 4096)
	_, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 4096, History: hybridctx.HistoryPolicy{MaskInputs: true}}, nil)
	if !errors.Is(err, hybridctx.ErrInvalidPolicy) {
		t.Fatalf("MaskInputs without a budget: %v", err)
	}
}

func TestCompactMaskInputsStoreFails(t *testing.T) {
	e := newEnv(t, 256)
	c := compactor(t, historyOff(t, e, 256, hybridctx.HistoryPolicy{Budget: 1 << 20, MaskInputs: true}))
	e.hooks.NewWriter = func(context.Context) error { return errors.New("disk full /secret") }
	calls, rs := writeCall(strings.Repeat("w", 2000))
	got, err := c.Compact(e.ctx, calls, rs)
	if err != nil || got.InputsMasked != 0 || got.Failed != 1 || got.Results[0].Input != rs[0].Input {
		t.Fatalf("%+v, %v", got, err)
	}
}
