package cli

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/agent/loop"
)

func TestDemoResultSizes(t *testing.T) {
	if n := len(demoBuildLog(demoBuildLines)); n != demoLogBytes {
		t.Fatalf("the build log is %d bytes, demoLogBytes says %d", n, demoLogBytes)
	}
	b, err := json.Marshal(demoReport(demoSuites))
	if err != nil || len(b) != demoReportBytes {
		t.Fatalf("the report is %d bytes (%v), demoReportBytes says %d", len(b), err, demoReportBytes)
	}
}

// The demo works at any threshold: when the report or the log stays
// inline, the agents read it there, and the history budget is raised so
// that the results kept whole fit.
func TestDemoAnyThreshold(t *testing.T) {
	for _, th := range []string{"27466", "27467", "30000", "1058470", "1058471", "2000000", "67108864"} {
		r := run(t, "demo", "--workspace", "mem://", "--json", "--threshold", th)
		wantCode(t, r, ExitOK)
		var v demoOut
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("threshold %s: %v %s", th, err, r.stdout)
		}
		if !strings.HasPrefix(v.Final, "The nightly build failed because") || v.Summary.Agents != 2 {
			t.Fatalf("threshold %s: %+v", th, v)
		}
	}
	// The sub-agent answered from its inline report.
	r := run(t, "demo", "--workspace", "mem://", "--threshold", "30000")
	wantCode(t, r, ExitOK)
	if strings.Contains(r.stdout, "tool [error]") || !strings.Contains(r.stdout, "3 of 400 suites failed") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
}

// A history budget the scenario cannot meet is a usage error, before the
// run; an invariant failure is an internal error, never a storage error.
func TestDemoInvariantErrors(t *testing.T) {
	r := run(t, "demo", "--workspace", "mem://", "--threshold", "30000", "--history-budget", "6144")
	wantCode(t, r, ExitUsage)
	wantOneErrorLine(t, r)
	if !strings.Contains(r.stderr, "at least 57494") {
		t.Fatalf("stderr %q", r.stderr)
	}
	err := error(&loop.InvariantError{Index: 2, Problem: loop.ProblemOverBudget, Bytes: 9, Threshold: 1})
	if c := errorCategoryOf(err); c != catInternal {
		t.Fatalf("an invariant error is %q", c.code)
	}
	for _, e := range []error{loop.ErrNoReference, loop.ErrScriptEnded} {
		if c := errorCategoryOf(e); c != catInternal {
			t.Fatalf("%v is %q", e, c.code)
		}
	}
	if !errors.Is(err, loop.ErrInvariant) {
		t.Fatal("not ErrInvariant")
	}
}
