package hybridctx_test

import (
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

// TestToolArgumentReason: a rehydration for a tool argument resolves with
// reason tool_argument; its other outcomes keep their own reasons.
func TestToolArgumentReason(t *testing.T) {
	e := newEnv(t, 10)
	out, err := e.off.Offload(e.ctx, hybridctx.Call{Tool: "t", ID: "1"}, strings.Repeat("x", 100))
	if err != nil {
		t.Fatal(err)
	}
	ref := out.Ref.String()
	cases := []struct {
		arg    bool
		budget int64
		ref    string
		o      hybridctx.Outcome
		r      hybridctx.Reason
	}{
		{true, 100, ref, hybridctx.Resolved, hybridctx.ToolArgument},
		{false, 100, ref, hybridctx.Resolved, hybridctx.DigestVerified},
		{true, 99, ref, hybridctx.OverBudget, hybridctx.BudgetExceeded},
		{true, 100, "artifact://sha256/" + strings.Repeat("0", 64), hybridctx.Unauthorized, hybridctx.OwnerMismatch},
	}
	for _, c := range cases {
		rh, err := e.reh.Rehydrate(e.ctx, hybridctx.Request{Reference: c.ref, Budget: c.budget, ToolArgument: c.arg})
		if err != nil {
			t.Fatal(err)
		}
		if rh.Outcome() != c.o || rh.Reason() != c.r || rh.Diagnostics().Content() != hybridctx.RecoveredContext {
			t.Errorf("argument %v budget %d: %v/%v, want %v/%v", c.arg, c.budget, rh.Outcome(), rh.Reason(), c.o, c.r)
		}
	}
	if hybridctx.ToolArgument.String() != "tool_argument" || !hybridctx.ValidPair(hybridctx.Resolved, hybridctx.ToolArgument) ||
		hybridctx.ValidPair(hybridctx.Offloaded, hybridctx.ToolArgument) {
		t.Error("tool_argument is not exactly a resolved reason")
	}
}
