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

// TestDispatcher: reads are answered without run; a host tool's result is
// decided once and seen by the hook; run's error and a nil run never reach
// the model as text.
func TestDispatcher(t *testing.T) {
	env := adapttest.New(t, nil)
	ctx := context.Background()
	if _, err := adaptkit.NewHandlerDispatcher(nil, env.Reh, nil); !errors.Is(err, adaptkit.ErrNilOffloader) {
		t.Fatalf("nil offloader: %v", err)
	}
	var seen []string
	d, err := adaptkit.NewHandlerDispatcher(env.Off, env.Reh, &adaptkit.HandlerOptions{
		OnDecision: func(_ context.Context, tool string, out *hybridctx.OffloadResult) {
			seen = append(seen, tool+":"+out.Outcome().String())
		}})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	run := func(_ context.Context, name string, _ json.RawMessage) (string, error) {
		runs++
		if name == "broken" {
			return "", errors.New("secret /etc/passwd")
		}
		return adapttest.Body(), nil
	}
	big := d.Handle(ctx, "1", "fetch", json.RawMessage(`{}`), run)
	if big.IsError || len(big.Text) > hybridctx.MaxNoticeLen || big.Offload.Outcome() != hybridctx.Offloaded {
		t.Fatalf("stored: %.80q", big.Text)
	}
	ref := big.Offload.Ref.String()
	read := d.Handle(ctx, "2", d.Tools()[0].Name, json.RawMessage(`{"reference":"`+ref+`","offset":0,"length":5}`), run)
	if read.IsError || read.Text != adapttest.Body()[:5] {
		t.Fatalf("read: %+v", read)
	}
	for _, r := range []adaptkit.Result{d.Handle(ctx, "3", "broken", nil, run), d.Handle(ctx, "4", "any", nil, nil)} {
		if r != adaptkit.Failed() || strings.Contains(r.Text, "passwd") {
			t.Fatalf("failure: %+v", r)
		}
	}
	if runs != 2 || len(seen) != 1 || seen[0] != "fetch:offloaded" {
		t.Fatalf("runs %d, decisions seen %v", runs, seen)
	}
}
