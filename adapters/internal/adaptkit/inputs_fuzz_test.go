package adaptkit_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
)

// FuzzCompactTextsInputs: any arguments, given as JSON text and as the Go
// value encoding/json decodes them to, come back valid JSON of the same
// shape in which every string that changed is a mask reading back exactly
// the string it replaced, and a second compaction changes nothing.
func FuzzCompactTextsInputs(f *testing.F) {
	long := strings.Repeat("line of a file \"quoted\" <b>&</b> é\n", 12)
	f.Add(adapttest.WriteFileArgs(long))
	f.Add(`["` + strings.Repeat("x", 400) + `", 1e400, {"k": "` + strings.Repeat("y", 300) + `"}]`)
	f.Add(`"` + strings.Repeat(`\u00e9\n`, 100) + `"`)
	f.Add(`{"a": 12345678901234567891, "b": "` + strings.Repeat("z", 500) + `"}`)
	f.Add(`{"a": "\ud800` + strings.Repeat("w", 300) + `"}`)
	env := adapttest.New(f, &hybridctx.Policy{InlineThreshold: 64,
		History: hybridctx.HistoryPolicy{Budget: 1 << 40, KeepRecent: -1, MaskInputs: true}})
	c := adaptkit.NewCompactor(env.Off, nil)
	notRead := func(string) bool { return false }
	f.Fuzz(func(t *testing.T, args string) {
		var v any
		if json.Unmarshal([]byte(args), &v) != nil || v == nil {
			return
		}
		ctx := context.Background()
		calls := []adaptkit.ToolCall{{ID: "text", Tool: "t", Args: args}, {ID: "value", Tool: "t", Value: v}}
		results := []adaptkit.ToolText{{CallID: "text", Text: "ok", CallsBefore: 2}, {CallID: "value", Text: "ok", CallsBefore: 2}}
		res, err := adaptkit.CompactTexts(ctx, c, notRead, calls, results)
		if err != nil {
			t.Fatal(err)
		}
		if res == nil || res.Calls == nil {
			return
		}
		again := append([]adaptkit.ToolCall(nil), calls...)
		for k, a := range res.Calls {
			if !a.Changed {
				continue
			}
			var got any
			if a.Args != "" {
				if err := json.Unmarshal([]byte(a.Args), &got); err != nil {
					t.Fatalf("masked arguments are not JSON: %v", err)
				}
			} else {
				if reflect.TypeOf(a.Value) != reflect.TypeOf(v) {
					t.Fatalf("value of type %T came back as %T", v, a.Value)
				}
				got = a.Value
			}
			checkMasked(t, env, v, got)
			again[k].Args, again[k].Value = a.Args, a.Value
		}
		if res, err := adaptkit.CompactTexts(ctx, c, notRead, again, results); err != nil || res != nil {
			t.Fatalf("compacting twice changed %+v (%v)", res, err)
		}
	})
}

// checkMasked checks that got has want's shape and that each string of got
// that differs is a mask reading back the string of want.
func checkMasked(t *testing.T, env *adapttest.Env, want, got any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			t.Fatalf("an object became %T", got)
		}
		for k := range w {
			checkMasked(t, env, w[k], g[k])
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Fatalf("an array became %T", got)
		}
		for i := range w {
			checkMasked(t, env, w[i], g[i])
		}
	case string:
		g, ok := got.(string)
		if !ok {
			t.Fatalf("a string became %T", got)
		}
		if g == w {
			return
		}
		st, ok := hybridctx.ParseStoredText(g)
		if !ok || !st.Masked || len(g) > hybridctx.MaxMaskLen {
			t.Fatalf("a changed string is no mask: %.100q", g)
		}
		back, err := env.Reh.Rehydrate(context.Background(), hybridctx.Request{Reference: st.Ref.String(), Budget: 1 << 30})
		if err != nil {
			t.Fatalf("reading a mask back: %v", err)
		}
		if string(back.Segment.Bytes()) != w {
			t.Fatalf("a mask reads back %q, not %q", back.Segment.Bytes(), w)
		}
	default:
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%v became %v", want, got)
		}
	}
}
