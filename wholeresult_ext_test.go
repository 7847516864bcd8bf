package hybridctx_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

// textsForm is a BoundForm over texts, each sent as a JSON string.
type textsForm struct {
	off    *hybridctx.Offloader
	call   hybridctx.Call
	texts  []string
	stored []*hybridctx.OffloadResult
	folded *hybridctx.OffloadResult
	bad    bool // Entry fails
}

func (f *textsForm) shown(i int) string {
	if f.stored[i] != nil {
		return f.stored[i].Text()
	}
	return f.texts[i]
}

func (f *textsForm) Parts() []hybridctx.ResultPart {
	out := make([]hybridctx.ResultPart, len(f.texts))
	for i := range f.texts {
		b, _ := json.Marshal(f.shown(i))
		out[i] = hybridctx.ResultPart{Type: "text", Size: int64(len(b)) + 1, Stored: f.stored[i] != nil}
	}
	return out
}

func (f *textsForm) Sent() (int64, error) {
	if f.folded != nil {
		b, _ := json.Marshal(f.folded.Text())
		return int64(len(b)), nil
	}
	var n int64
	for _, p := range f.Parts() {
		n += p.Size
	}
	return n, nil
}

func (f *textsForm) StorePart(ctx context.Context, i int) error {
	out, err := f.off.Store(ctx, f.call, f.texts[i])
	f.stored[i] = out
	return err
}

func (f *textsForm) Entry(i int) (json.RawMessage, error) {
	if f.bad {
		return json.RawMessage("{"), nil
	}
	return json.Marshal(map[string]string{"type": "text", "text": f.texts[i]})
}

func (f *textsForm) Fold(out *hybridctx.OffloadResult, _ []int) error { f.folded = out; return nil }

func newTexts(off *hybridctx.Offloader, texts []string) *textsForm {
	return &textsForm{off: off, call: hybridctx.Call{Tool: "t", ID: "1"}, texts: texts, stored: make([]*hybridctx.OffloadResult, len(texts))}
}

func TestBoundResult(t *testing.T) {
	e := newEnv(t, 1000) // bound 4,000 bytes
	// Within the bound: nothing happens.
	f := newTexts(e.off, []string{"a", "b"})
	if out, err := e.off.BoundResult(e.ctx, f.call, f); out != nil || err != nil || f.stored[0] != nil {
		t.Fatalf("%v %v", out, err)
	}
	// One part 6,000 bytes as encoded (1,000 under the threshold): stored.
	f = newTexts(e.off, []string{strings.Repeat("\x01", 1000), "small"})
	if out, err := e.off.BoundResult(e.ctx, f.call, f); out != nil || err != nil || f.stored[0] == nil || f.stored[1] != nil {
		t.Fatalf("%v %v", out, err)
	}
	// Many parts: folded, read back whole.
	var texts []string
	for range 40 {
		texts = append(texts, strings.Repeat("z", 900))
	}
	f = newTexts(e.off, texts)
	out, err := e.off.BoundResult(e.ctx, f.call, f)
	if err != nil || out == nil || f.folded != out || out.Outcome() != hybridctx.Offloaded {
		t.Fatalf("%v %v", out, err)
	}
	if !strings.HasPrefix(out.Notice, out.Ref.String()+"\n40 content blocks (40 text), one JSON array of ") {
		t.Fatalf("notice %q", out.Notice)
	}
	got, err := e.reh.Rehydrate(e.ctx, hybridctx.Request{Reference: out.Ref.String(), Budget: 1 << 20})
	var back []struct{ Type, Text string }
	if err != nil || json.Unmarshal(got.Segment.Bytes(), &back) != nil || len(back) != 40 || back[39].Text != texts[39] {
		t.Fatalf("read back: %v", err)
	}
	if sent, _ := f.Sent(); sent > e.off.Policy().ResultBound() {
		t.Fatalf("%d bytes sent", sent)
	}
	// A fold over the threshold is streamed into the workspace.
	texts = texts[:0]
	for i := range 100 {
		texts = append(texts, strings.Repeat(string(rune('a'+i%26)), 900))
	}
	if out, err := e.off.BoundResult(e.ctx, f.call, newTexts(e.off, texts)); err != nil || out.Outcome() != hybridctx.Offloaded {
		t.Fatalf("%v %v", out, err)
	}
	// A form whose entry is not JSON: no decision.
	f = newTexts(e.off, texts)
	f.bad = true
	if _, err := e.off.BoundResult(e.ctx, f.call, f); err == nil || f.folded != nil {
		t.Fatalf("bad entry: %v", err)
	}
	// A cancelled context and an invalid call: no decision.
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.off.BoundResult(ctx, f.call, newTexts(e.off, texts)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := e.off.BoundResult(e.ctx, hybridctx.Call{Tool: strings.Repeat("t", 10000)}, newTexts(e.off, texts)); !errors.Is(err, hybridctx.ErrInvalidCall) {
		t.Fatalf("invalid call: %v", err)
	}
}
