package hybridctx

import (
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

var goodRef = artifact.RefOf([]byte("abc")).String()

func TestOffloadConstructorRejects(t *testing.T) {
	bad := []struct {
		name     string
		o        Outcome
		r        Reason
		obs, thr int64
		ref      string
		want     error
	}{
		{"rehydration outcome", Resolved, DigestVerified, 1, 1, goodRef, errOutOfRange},
		{"zero outcome", 0, BelowThreshold, 1, 1, "", errOutOfRange},
		{"inline with threshold_exceeded", Inline, ThresholdExceeded, 1, 1, "", errInvalidPair},
		{"offloaded with below_threshold", Offloaded, BelowThreshold, 1, 1, goodRef, errInvalidPair},
		{"failed with digest reason", Failed, DigestMismatch, 1, 1, "", errInvalidPair},
		{"recovery with write failed", RecoveryRequired, WorkspaceWriteFailed, 1, 1, "", errInvalidPair},
		{"negative observed", Inline, BelowThreshold, -1, 1, "", errOutOfRange},
		{"zero threshold", Inline, BelowThreshold, 1, 0, "", errOutOfRange},
		{"offloaded without ref", Offloaded, ThresholdExceeded, 2, 1, "", errInvalidRefText},
		{"existing without ref", ExistingReference, ExistingContentMatch, 2, 1, "", errInvalidRefText},
		{"inline with ref", Inline, BelowThreshold, 1, 1, goodRef, errInvalidRefText},
		{"failed with ref", Failed, NoAuthorizedWorkspace, 2, 1, goodRef, errInvalidRefText},
		{"recovery with ref", RecoveryRequired, CanceledAfterWrite, 2, 1, goodRef, errInvalidRefText},
		{"sha1 prefix", Offloaded, ThresholdExceeded, 2, 1, "artifact://sha1/" + strings.Repeat("a", 40), errInvalidRefText},
		{"uppercase", Offloaded, ThresholdExceeded, 2, 1, strings.ToUpper(goodRef), errInvalidRefText},
		{"upper hex", Offloaded, ThresholdExceeded, 2, 1, artifact.Prefix + strings.Repeat("A", 64), errInvalidRefText},
		{"not canonical", Offloaded, ThresholdExceeded, 2, 1, "not-a-canonical-reference-id", errInvalidRefText},
		{"not hex", Offloaded, ThresholdExceeded, 2, 1, artifact.Prefix + "not-actually-hex", errInvalidRefText},
		{"blank", Offloaded, ThresholdExceeded, 2, 1, "   ", errInvalidRefText},
		{"trailing space", Offloaded, ThresholdExceeded, 2, 1, goodRef + " ", errInvalidRefText},
	}
	for _, c := range bad {
		d, err := newOffloadDiagnostics(c.o, c.r, c.obs, c.thr, c.ref)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		_ = d
	}
	for i, reasons := range validPairs {
		o := Outcome(i)
		if o.Operation() != OpOffload {
			continue
		}
		for _, r := range reasons {
			ref := ""
			if o == Offloaded || o == ExistingReference {
				ref = goodRef
			}
			if _, err := newOffloadDiagnostics(o, r, 5, 1, ref); err != nil {
				t.Errorf("%v/%v rejected: %v", o, r, err)
			}
		}
	}
}

func TestRehydrationConstructorRejects(t *testing.T) {
	bad := []struct {
		name        string
		o           Outcome
		r           Reason
		obs, budget int64
		ref         string
		want        error
	}{
		{"offload outcome", Inline, BelowThreshold, 1, 1, goodRef, errOutOfRange},
		{"resolved with mismatch", Resolved, DigestMismatch, 1, 1, goodRef, errInvalidPair},
		{"stale with owner reason", Stale, OwnerMismatch, 1, 1, goodRef, errInvalidPair},
		{"invalid ref with budget reason", InvalidReference, BudgetExceeded, -1, 1, "", errInvalidPair},
		{"zero budget", Resolved, DigestVerified, 1, 0, goodRef, errOutOfRange},
		{"resolved with null observed", Resolved, DigestVerified, -1, 1, goodRef, errOutOfRange},
		{"unauthorized with observed", Unauthorized, OwnerMismatch, 3, 1, goodRef, errOutOfRange},
		{"missing with observed", Missing, BodyMissing, 3, 1, goodRef, errOutOfRange},
		{"resolved without ref", Resolved, DigestVerified, 1, 1, "", errInvalidRefText},
		{"stale uppercase", Stale, DigestMismatch, 1, 1, strings.ToUpper(goodRef), errInvalidRefText},
		{"over budget sha1", OverBudget, BudgetExceeded, 1, 1, "artifact://sha1/" + strings.Repeat("a", 40), errInvalidRefText},
		{"invalid ref with ref", InvalidReference, MalformedReference, -1, 1, goodRef, errInvalidRefText},
	}
	for _, c := range bad {
		if _, err := newRehydrationDiagnostics(ViewRange, c.o, c.r, c.obs, c.budget, c.ref, 0); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	d, err := newRehydrationDiagnostics(ViewRange, InvalidReference, MalformedReference, -1, 10, "", 7)
	if err != nil || d.content != RecoveredContext || d.attrIn != 7 {
		t.Fatalf("invalid reference: %v %+v", err, d)
	}
}

func TestEnumNames(t *testing.T) {
	seen := map[string]bool{}
	for r := BelowThreshold; int(r) < NumReasons; r++ {
		n := r.String()
		if seen[n] || strings.ContainsAny(n, " ()") || strings.ToLower(n) != n {
			t.Errorf("reason %d name %q", r, n)
		}
		seen[n] = true
	}
	if Outcome(99).String() != "outcome(99)" || Reason(0).String() != "reason(0)" {
		t.Fatal("unknown values must render visibly")
	}
	every := 0
	for _, rs := range validPairs {
		every += len(rs)
	}
	// history_budget is the one reason of two outcomes (offloaded and
	// existing_reference); every other reason belongs to exactly one.
	if every != NumReasons {
		t.Fatalf("valid pairs cover %d reasons, want every one of %d exactly once and history_budget twice", every, NumReasons-1)
	}
}

func TestViewNames(t *testing.T) {
	want := []string{"range", "lines", "search", "query"}
	for i, n := range want {
		if v := View(i + 1); v.String() != n || !v.valid() {
			t.Errorf("view %d = %q", i+1, v)
		}
	}
	if View(0).valid() || View(5).valid() || View(9).String() != "view(9)" {
		t.Fatal("views outside the table")
	}
	if _, err := newRehydrationDiagnostics(0, Resolved, DigestVerified, 1, 1, goodRef, 0); !errors.Is(err, errOutOfRange) {
		t.Fatalf("rehydration without view: %v", err)
	}
	for _, r := range []Reason{NotJSON, FilterError, LimitExceeded, Busy} {
		d, err := newRehydrationDiagnostics(ViewQuery, ViewFailed, r, 0, 10, goodRef, 0)
		if err != nil || d.View() != ViewQuery || d.Outcome().Operation() != OpRehydration {
			t.Fatalf("%v: %v", r, err)
		}
		if _, _, ok := d.Attribution(); ok {
			t.Fatal("view_failed returns nothing")
		}
	}
	if _, err := newRehydrationDiagnostics(ViewQuery, ViewFailed, DigestMismatch, 0, 10, goodRef, 0); !errors.Is(err, errInvalidPair) {
		t.Fatal("view_failed with a foreign reason")
	}
}
