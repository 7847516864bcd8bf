package cli

import (
	"strings"
	"testing"
)

// TestQueryHostileFilters: the adversarial probe's filters end as
// view_failed/limit_exceeded, exit 11, with one categorical line, and the
// process lives on (a stack overflow in the filter used to end it with
// exit 2 and a stack dump).
func TestQueryHostileFilters(t *testing.T) {
	ws := newWorkspace(t)
	doc := `{"jobs":[` + strings.Repeat(`{"name":"build","ok":true},`, 50) + `{"name":"deploy","ok":false}]}`
	ref := offloadRef(t, ws, []byte(doc)).String()
	for _, filter := range []string{
		`reduce range(1500000) as $i (null; [.]) | contains(.)`,
		`[0] | .[2e8] = 1 | tojson | length`,
		`[limit(300000; repeat(.))] | tojson | length`,
	} {
		r := run(t, host(ws, "query", ref, filter, "--budget", "4096")...)
		wantCode(t, r, ExitViewFailed)
		if r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "limit_exceeded") {
			t.Fatalf("%s: stdout %q stderr %q", filter, r.stdout, r.stderr)
		}
	}
}
