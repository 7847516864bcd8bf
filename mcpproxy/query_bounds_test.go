package mcpproxy

import (
	"strings"
	"testing"
)

// TestProxyHostileFilters: query_artifact with the adversarial probe's
// filters answers view_failed (limit_exceeded) and the session goes on (a
// stack overflow in the filter used to end the proxy with every session).
func TestProxyHostileFilters(t *testing.T) {
	r, _, _, _ := viewsRig(t, &events{})
	jobs := linkOf(t, r.call(t, "jobs", nil)).URI
	for _, filter := range []string{
		`reduce range(1500000) as $i (null; [.]) | contains(.)`,
		`[0] | .[2e8] = 1 | tojson | length`,
	} {
		got := r.call(t, "query_artifact", map[string]any{"reference": jobs, "filter": filter})
		if !got.IsError || !strings.HasPrefix(texts(got)[0], "hybridctx: view_failed (limit_exceeded)") {
			t.Fatalf("%s: %s", filter, dump(got))
		}
	}
	got := r.call(t, "query_artifact", map[string]any{"reference": jobs, "filter": `.jobs | length`})
	if got.IsError || !strings.HasPrefix(texts(got)[0], "61\n") {
		t.Fatalf("after: %s", dump(got))
	}
}
