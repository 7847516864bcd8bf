package adapttest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/hybridctx/hybridctx"
)

// WriteTool is the name of the write-file tool of the input tests.
const WriteTool = "write_file"

// InputsPolicy is the policy of the input tests: tool inputs masked, and a
// budget so large that no result is.
func InputsPolicy() *hybridctx.Policy {
	return &hybridctx.Policy{InlineThreshold: Threshold,
		History: hybridctx.HistoryPolicy{Budget: 1 << 30, KeepRecent: -1, MaskInputs: true}}
}

// FileContent returns the 10 KiB a write-file call carries: text with
// characters JSON escapes (quotes, backslashes, tabs, newlines, HTML
// characters) and multi-byte ones, so only an exact decoding reads back.
func FileContent() string {
	var b strings.Builder
	for i := 0; b.Len() < 10<<10; i++ {
		fmt.Fprintf(&b, "%05d\t<p class=\"x\">café & naïve \\ path\\to\\file — ü</p>\n", i)
	}
	return b.String()
}

// WriteFileArgs returns the JSON arguments of a write-file call of
// content, as a model writes them: a short path, the content, a number and
// a nested object.
func WriteFileArgs(content string) string {
	c, err := json.Marshal(content)
	if err != nil {
		panic(err)
	}
	return `{"path": "notes/big.txt", "content": ` + string(c) + `, "mode": 420, "opts": {"append": false, "tags": ["a", "b"]}}`
}

// CheckMaskedArgs checks that masked, the arguments orig became, are valid
// JSON of orig's shape: the same keys and values, but for "content", now a
// mask of at most hybridctx.MaxMaskLen bytes that e's Rehydrator resolves
// to exactly content.
func (e *Env) CheckMaskedArgs(ctx context.Context, orig, masked []byte, content string) error {
	var a, b map[string]any
	if err := json.Unmarshal(orig, &a); err != nil {
		return fmt.Errorf("original arguments: %w", err)
	}
	if err := json.Unmarshal(masked, &b); err != nil {
		return fmt.Errorf("masked arguments are not JSON: %w: %.200s", err, masked)
	}
	mask, ok := b["content"].(string)
	if !ok {
		return fmt.Errorf("masked content is %T, not a string", b["content"])
	}
	st, ok := hybridctx.ParseStoredText(mask)
	if !ok || !st.Masked || len(mask) > hybridctx.MaxMaskLen {
		return fmt.Errorf("content is not a mask: %.200q", mask)
	}
	delete(a, "content")
	delete(b, "content")
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("the other arguments changed: %v, was %v", b, a)
	}
	back, err := e.Reh.Rehydrate(ctx, hybridctx.Request{Reference: st.Ref.String(), Budget: 1 << 30})
	if err != nil {
		return fmt.Errorf("reading the mask back: %w", err)
	}
	if string(back.Segment.Bytes()) != content {
		return fmt.Errorf("the mask reads back %d bytes, not the %d of the content", len(back.Segment.Bytes()), len(content))
	}
	return nil
}
