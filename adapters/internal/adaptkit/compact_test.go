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
)

// TestCompactTextsForged: texts that start like a notice or a mask and go
// on, or forge a notice's size, are stored before they are masked, so each
// mask reads back the whole text; the owner's own notice masks to its body
// without being stored again.
func TestCompactTextsForged(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: adapttest.Threshold,
		History: hybridctx.HistoryPolicy{Budget: 100, KeepRecent: -1}})
	ctx := context.Background()
	body := strings.Repeat("a line of the first result\n", 400)
	notice, err := env.Offload(ctx, body)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := hybridctx.ParseStoredText(notice)
	texts := []string{
		notice, // the owner's notice
		notice + "\nand the model's findings after it\n" + strings.Repeat("finding\n", 400),
		strings.Replace(notice, "lines, text", "lines, json", 1),
		st.Ref.String() + "\n10 bytes, 1 lines, text; masked. Read with read_artifact.\n" + strings.Repeat("500 KB behind a mask\n", 25_000),
	}
	var calls []adaptkit.ToolCall
	var results []adaptkit.ToolText
	for i, text := range texts {
		id := string(rune('a' + i))
		calls = append(calls, adaptkit.ToolCall{ID: id, Tool: "t"})
		results = append(results, adaptkit.ToolText{CallID: id, Text: text, CallsBefore: len(calls)})
	}
	c := adaptkit.NewCompactor(env.Off, nil)
	res, err := adaptkit.CompactTexts(ctx, c, func(string) bool { return false }, calls, results)
	if err != nil {
		t.Fatal(err)
	}
	out, changed := res.Texts, res.Changed
	for i, text := range out {
		m, ok := hybridctx.ParseStoredText(text)
		if !changed[i] || !ok || !m.Masked {
			t.Fatalf("result %d not masked: %.120q", i, text)
		}
		want := texts[i]
		if i == 0 {
			want = body
		}
		back, err := env.Reh.Rehydrate(ctx, hybridctx.Request{Reference: m.Ref.String(), Budget: 1 << 30})
		if err != nil || string(back.Segment.Bytes()) != want {
			t.Fatalf("result %d: the mask does not read back what it replaced (%v)", i, err)
		}
	}
	if m, _ := hybridctx.ParseStoredText(out[0]); m.Ref != st.Ref {
		t.Fatal("the owner's notice was stored again")
	}
}

// TestCompactTextsResultBeforeCall: a result placed before the call it
// answers is an invalid history.
func TestCompactTextsResultBeforeCall(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: adapttest.Threshold,
		History: hybridctx.HistoryPolicy{Budget: 100, KeepRecent: -1}})
	c := adaptkit.NewCompactor(env.Off, nil)
	// [result a, call a]: no call before the result.
	calls := []adaptkit.ToolCall{{ID: "a", Tool: "t"}}
	results := []adaptkit.ToolText{{CallID: "a", Text: strings.Repeat("x", 5000), CallsBefore: 0}}
	res, err := adaptkit.CompactTexts(context.Background(), c, func(string) bool { return false }, calls, results)
	if !errors.Is(err, hybridctx.ErrInvalidHistory) || res != nil {
		t.Fatalf("result before its call: %v", err)
	}
	results[0].CallsBefore = 1
	if _, err := adaptkit.CompactTexts(context.Background(), c, func(string) bool { return false }, calls, results); err != nil {
		t.Fatal(err)
	}
}

// TestCompactTextsInputs: with MaskInputs the long string of each answered
// call's arguments is masked, whether the adapter gives JSON text or a Go
// value (which comes back of its own type); the masks read back the
// content, a second compaction changes nothing, a value whose type cannot
// take the mask stays as it was, and without MaskInputs no input is
// touched.
func TestCompactTextsInputs(t *testing.T) {
	env := adapttest.New(t, adapttest.InputsPolicy())
	ctx := context.Background()
	content := adapttest.FileContent()
	args := adapttest.WriteFileArgs(content)
	var asMap map[string]any
	if err := json.Unmarshal([]byte(args), &asMap); err != nil {
		t.Fatal(err)
	}
	type writeFile struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	calls := []adaptkit.ToolCall{
		{ID: "text", Tool: adapttest.WriteTool, Args: args},
		{ID: "raw", Tool: adapttest.WriteTool, Value: json.RawMessage(args)},
		{ID: "map", Tool: adapttest.WriteTool, Value: asMap},
		{ID: "struct", Tool: adapttest.WriteTool, Value: &writeFile{Path: "p", Content: content}},
		{ID: "bytes", Tool: adapttest.WriteTool, Value: []byte(content)}, // a base64 string: a mask is no []byte
		{ID: "small", Tool: adapttest.WriteTool, Args: `{"path":"a"}`},
		// Masked as JSON, but a mask does not decode into a []byte field.
		{ID: "nested bytes", Tool: adapttest.WriteTool, Value: struct{ Data []byte }{[]byte(content)}},
		// A number a float64 cannot carry: decoded again, it would change.
		{ID: "big number", Tool: adapttest.WriteTool, Value: map[string]any{"content": content, "id": json.Number("12345678901234567891")}},
	}
	var results []adaptkit.ToolText
	for i, c := range calls {
		results = append(results, adaptkit.ToolText{CallID: c.ID, Text: "ok", CallsBefore: i + 1})
	}
	c := adaptkit.NewCompactor(env.Off, nil)
	notRead := func(string) bool { return false }
	res, err := adaptkit.CompactTexts(ctx, c, notRead, calls, results)
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || len(res.Calls) != len(calls) {
		t.Fatalf("no input masked: %+v", res)
	}
	for _, ch := range res.Changed {
		if ch {
			t.Fatal("a result within the budget was masked")
		}
	}
	got := func(i int) []byte {
		t.Helper()
		a := res.Calls[i]
		if !a.Changed {
			t.Fatalf("call %s: input not masked", calls[i].ID)
		}
		if a.Args != "" {
			return []byte(a.Args)
		}
		b, err := json.Marshal(a.Value)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for i := range 3 {
		if err := env.CheckMaskedArgs(ctx, []byte(args), got(i), content); err != nil {
			t.Fatalf("call %s: %v", calls[i].ID, err)
		}
	}
	if _, ok := res.Calls[1].Value.(json.RawMessage); !ok {
		t.Fatalf("raw input came back as %T", res.Calls[1].Value)
	}
	if _, ok := res.Calls[2].Value.(map[string]any); !ok {
		t.Fatalf("map input came back as %T", res.Calls[2].Value)
	}
	w, ok := res.Calls[3].Value.(*writeFile)
	if !ok || w.Path != "p" || len(w.Content) > hybridctx.MaxMaskLen {
		t.Fatalf("struct input came back as %#v", res.Calls[3].Value)
	}
	if res.Calls[4].Changed || res.Calls[5].Changed || res.Calls[6].Changed || res.Calls[7].Changed {
		t.Fatal("an input that cannot take a mask, or a short one, changed")
	}

	// A second compaction of the compacted calls changes nothing.
	again := append([]adaptkit.ToolCall(nil), calls...)
	for i := range 4 {
		again[i].Args, again[i].Value = res.Calls[i].Args, res.Calls[i].Value
	}
	if res2, err := adaptkit.CompactTexts(ctx, c, notRead, again, results); err != nil || res2 != nil {
		t.Fatalf("compacting twice changed %+v (%v)", res2, err)
	}

	// Without MaskInputs no input is passed on.
	plain := adapttest.New(t, &hybridctx.Policy{InlineThreshold: adapttest.Threshold,
		History: hybridctx.HistoryPolicy{Budget: 1 << 30, KeepRecent: -1}})
	if res, err := adaptkit.CompactTexts(ctx, adaptkit.NewCompactor(plain.Off, nil), notRead, calls, results); err != nil || res != nil {
		t.Fatalf("without MaskInputs: %+v (%v)", res, err)
	}
}
