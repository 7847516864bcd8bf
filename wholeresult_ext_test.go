package hybridctx_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/hybridctx/hybridctx"
)

func TestStoreResult(t *testing.T) {
	e := newEnv(t, 100)
	call := hybridctx.Call{Tool: "t", ID: "1"}
	// Under the threshold (stored anyway) and over it (streamed).
	for _, body := range []string{`[{"type":"text","text":"a"},{"type":"image","data":"AA=="}]`,
		`[{"type":"text","text":"` + strings.Repeat("b", 500) + `"},{"type":"text","text":"c"}]`} {
		out, err := e.off.StoreResult(e.ctx, call, strings.NewReader(body), []string{"text", "image"})
		if err != nil || out.Outcome() != hybridctx.Offloaded {
			t.Fatalf("%v %v", err, out)
		}
		if !strings.HasPrefix(out.Notice, out.Ref.String()+"\n2 content blocks (1 text, 1 image), one JSON array of ") {
			t.Fatalf("notice %q", out.Notice)
		}
		got, err := e.reh.Rehydrate(e.ctx, hybridctx.Request{Reference: out.Ref.String(), Budget: 4096})
		if err != nil || string(got.Segment.Bytes()) != body {
			t.Fatalf("read back %v", err)
		}
	}
	// A reader that fails: no decision.
	if _, err := e.off.StoreResult(e.ctx, call, iotest.ErrReader(io.ErrUnexpectedEOF), nil); !errors.Is(err, hybridctx.ErrSource) {
		t.Fatalf("failing reader: %v", err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.off.StoreResult(ctx, call, strings.NewReader("[]"), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if !(hybridctx.Policy{InlineThreshold: 10}).SendsOverResultBound(41) || (hybridctx.Policy{InlineThreshold: 10}).SendsOverResultBound(40) {
		t.Fatal("SendsOverResultBound")
	}
}
