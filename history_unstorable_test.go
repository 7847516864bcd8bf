package hybridctx_test

import (
	"testing"

	"github.com/hybridctx/hybridctx"
)

// TestCompactUnstorableKeepsText: a result a history cannot store (no
// workspace, or larger than the workspace accepts) keeps its text, and its
// decision says why, as an offload of it would.
func TestCompactUnstorableKeepsText(t *testing.T) {
	e := newEnv(t, 4096)
	h := hybridctx.HistoryPolicy{Budget: 2400, KeepRecent: 1}
	nobind, err := hybridctx.NewOffloader(nil, hybridctx.Policy{InlineThreshold: 4096, History: h}, nil)
	if err != nil {
		t.Fatal(err)
	}
	small, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 400, MaxArtifactBytes: 500, History: h}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		off  *hybridctx.Offloader
		want hybridctx.Reason
	}{{nobind, hybridctx.NoAuthorizedWorkspace}, {small, hybridctx.ExceedsMaxArtifactSize}} {
		before := len(e.events.all())
		calls, rs := inlineHistory(4, 1000)
		got, err := compactor(t, c.off).Compact(e.ctx, calls, rs)
		if err != nil {
			t.Fatal(err)
		}
		if got.Failed != 3 || !got.OverBudget {
			t.Fatalf("%v: failed %d, over %v", c.want, got.Failed, got.OverBudget)
		}
		for i, r := range got.Results[:3] {
			if !r.Failed || r.Masked || r.Text != rs[i].Text {
				t.Fatalf("%v: result %d %+v", c.want, i, r)
			}
		}
		failed := 0
		for _, ev := range e.events.all()[before:] {
			if d := ev.Diagnostics; d != nil && d.Outcome() == hybridctx.Failed {
				if d.Reason() != c.want {
					t.Fatalf("%v: event reason %v", c.want, d.Reason())
				}
				failed++
			}
		}
		if failed != 3 {
			t.Fatalf("%v: %d failed decisions reported, want 3", c.want, failed)
		}
	}
}
