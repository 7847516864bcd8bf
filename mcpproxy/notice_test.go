package mcpproxy

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestProxyNoticeLeadsToTheRead: through a real tools/call, the notice of
// a JSON result shows the query call and the document's outline, and the
// notice of a text result the search call; a client that fills in the
// placeholder (the filter written from the outline) gets its answer in
// one call.
func TestProxyNoticeLeadsToTheRead(t *testing.T) {
	r, _, _, _ := viewsRig(t, &events{})

	res := r.call(t, "jobs", nil)
	ref := linkOf(t, res).URI
	lines := strings.Split(texts(res)[0], "\n")
	if len(lines) != 4 || lines[0] != ref {
		t.Fatalf("notice %q", texts(res)[0])
	}
	if want := `Query it with query_artifact {"reference": "` + ref + `", "filter": "<jq filter>"}.`; lines[2] != want {
		t.Fatalf("line 3 %q\nwant %q", lines[2], want)
	}
	if want := `shape: {"jobs": array[61] of {"name": string, "ok": bool}}`; lines[3] != want {
		t.Fatalf("line 4 %q\nwant %q", lines[3], want)
	}
	got := r.call(t, "query_artifact", fill(t, lines[2], "filter", ".jobs[60].name"))
	if got.IsError || !strings.HasPrefix(texts(got)[0], "\"deploy\"\n") {
		t.Fatalf("query: %s", dump(got))
	}

	res = r.call(t, "large", map[string]any{"size": 10000})
	ref = linkOf(t, res).URI
	lines = strings.Split(texts(res)[0], "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], `Search it with search_artifact {"reference": "`+ref+`", "pattern": "<text to find>"} or read its lines with read_artifact {"reference": "`+ref+`", "start_line": 1, "line_count": 100}.`) {
		t.Fatalf("notice %q", texts(res)[0])
	}
	got = r.call(t, "search_artifact", fill(t, lines[2], "pattern", "line 000123 "))
	if got.IsError || !strings.HasPrefix(texts(got)[0], "124:line 000123 of a long tool result\n") {
		t.Fatalf("search: %s", dump(got))
	}
}

// fill returns the arguments of the first call a notice's line shows, the
// placeholder of arg replaced by v.
func fill(t *testing.T, line, arg, v string) map[string]any {
	t.Helper()
	i := strings.IndexByte(line, '{')
	var args map[string]any
	if err := json.NewDecoder(strings.NewReader(line[i:])).Decode(&args); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if _, ok := args[arg]; !ok {
		t.Fatalf("%q has no %q", line, arg)
	}
	args[arg] = v
	return args
}
