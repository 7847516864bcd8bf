package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func cliLog(n int) []byte {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i == 700 {
			b.WriteString("panic: token-7f3a in worker\n")
			continue
		}
		fmt.Fprintf(&b, "%05d request ok\n", i)
	}
	return []byte(b.String())
}

func TestRehydrateLines(t *testing.T) {
	ws := newWorkspace(t)
	body := cliLog(1000) // 1000 lines of 20 bytes, except line 700
	ref := offloadRef(t, ws, body).String()
	lines := strings.SplitAfter(string(body), "\n")

	r := run(t, host(ws, "rehydrate", ref, "--budget", "4096", "--start-line", "699", "--line-count", "3")...)
	wantCode(t, r, ExitOK)
	if r.stdout != strings.Join(lines[698:701], "") || r.stderr != "" {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	// A page cut by the budget: whole lines on stdout, the note on stderr.
	r = run(t, host(ws, "rehydrate", ref, "--budget", "50", "--start-line", "1")...)
	wantCode(t, r, ExitOK)
	if r.stdout != lines[0]+lines[1] || r.stderr != "hybridctx: lines 1-2 of 1000 shown (the budget is full); continue with --start-line 3\n" {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	js := run(t, host(ws, "--json", "rehydrate", ref, "--budget", "50", "--start-line", "1")...)
	wantCode(t, js, ExitOK)
	m := decodeObject(t, js.stdout)
	wantKeys(t, m, "outcome", "reason", "diagnostics", "page", "content_base64")
	got, _ := base64.StdEncoding.DecodeString(str(t, m["content_base64"]))
	if string(got) != lines[0]+lines[1] || string(m["page"]) != `{"total":1000,"first":1,"count":2,"next":3}` {
		t.Fatalf("json %s", js.stdout)
	}
	// The first line alone over the budget: over_budget with its offset.
	r = run(t, host(ws, "rehydrate", ref, "--budget", "10", "--start-line", "2")...)
	wantCode(t, r, ExitOverBudget)
	if r.stdout != "" || !strings.Contains(r.stderr, "line 2 alone is 17 bytes") || !strings.Contains(r.stderr, "--offset 17 ") ||
		!strings.Contains(r.stderr, "--length at most 10") || strings.Contains(r.stderr, "read_artifact") {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	// Past the end: nothing on standard output, exit 0 (like a byte range
	// past the end), and standard error says so.
	for start, want := range map[string]string{"1001": "1000 lines", "5000": "1000 lines"} {
		r = run(t, host(ws, "rehydrate", ref, "--budget", "50", "--start-line", start)...)
		wantCode(t, r, ExitOK)
		if r.stdout != "" || r.stderr != "hybridctx: --start-line "+start+" is past the end: the body has "+want+"\n" {
			t.Fatalf("past the end: stdout %q stderr %q", r.stdout, r.stderr)
		}
	}
	one := offloadRef(t, ws, []byte(strings.Repeat("x", 40))).String() // one line, no LF
	r = run(t, host(ws, "rehydrate", one, "--budget", "50", "--start-line", "2")...)
	if r.code != ExitOK || r.stdout != "" || r.stderr != "hybridctx: --start-line 2 is past the end: the body has 1 line\n" {
		t.Fatalf("one line: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, host(ws, "rehydrate", one, "--budget", "50", "--start-line", "1")...)
	if r.code != ExitOK || r.stdout != strings.Repeat("x", 40) || r.stderr != "" {
		t.Fatalf("the last line: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, bad := range [][]string{
		{"--start-line", "0"}, {"--start-line", "1", "--offset", "3"}, {"--line-count", "3"}, {"--start-line", "1", "--line-count", "0"},
	} {
		wantCode(t, run(t, host(ws, append([]string{"rehydrate", ref, "--budget", "10"}, bad...)...)...), ExitUsage)
	}
}

func TestSearchCommand(t *testing.T) {
	ws := newWorkspace(t)
	ref := offloadRef(t, ws, cliLog(1000)).String()
	r := run(t, host(ws, "search", ref, "token-7f3a", "--budget", "4096", "--context", "1")...)
	wantCode(t, r, ExitOK)
	want := "699-00699 request ok\n700:panic: token-7f3a in worker\n701-00701 request ok\n"
	if r.stdout != want || r.stderr != "hybridctx: 1 match (showing 1-1)\n" {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	r = run(t, host(ws, "search", ref, "REQUEST OK", "--ignore-case", "--budget", "4096", "--max-matches", "2", "--skip", "997")...)
	if r.stdout != "999:00999 request ok\n1000:01000 request ok\n" || r.stderr != "hybridctx: 999 matches (showing 998-999)\n" {
		t.Fatalf("paged %q %q", r.stdout, r.stderr)
	}
	// Stopped by --max-matches: the search's own note, naming --skip.
	r = run(t, host(ws, "search", ref, "request ok", "--budget", "4096", "--max-matches", "3")...)
	if r.stdout != "1:00001 request ok\n2:00002 request ok\n3:00003 request ok\n" ||
		r.stderr != "hybridctx: 999 matches (showing 1-3); continue with --skip 3\n" {
		t.Fatalf("max-matches %q %q", r.stdout, r.stderr)
	}
	r = run(t, host(ws, "search", ref, `^\d+ request ok$`, "--regex", "--budget", "4096", "--skip", "998")...)
	if r.stdout != "1000:01000 request ok\n" {
		t.Fatalf("regex %q", r.stdout)
	}
	r = run(t, host(ws, "search", ref, "absent", "--budget", "4096")...)
	wantCode(t, r, ExitOK)
	if r.stdout != "" || r.stderr != "hybridctx: 0 matches (showing none)\n" {
		t.Fatalf("zero %q %q", r.stdout, r.stderr)
	}
	js := run(t, host(ws, "--json", "search", ref, "token-7f3a", "--budget", "4096")...)
	m := decodeObject(t, js.stdout)
	wantKeys(t, m, "outcome", "reason", "diagnostics", "page", "answer", "summary")
	if str(t, m["answer"]) != "700:panic: token-7f3a in worker\n" || str(t, m["summary"]) != "1 match (showing 1-1)" ||
		!strings.Contains(string(m["diagnostics"]), `"view":"search"`) || js.stderr != "" {
		t.Fatalf("json %s", js.stdout)
	}
	r = run(t, host(ws, "search", ref, "token", "--budget", "10")...)
	wantCode(t, r, ExitOverBudget)
	if r.stdout != "" || !strings.HasPrefix(r.stderr, "hybridctx: over_budget (budget_exceeded): the first match") ||
		!strings.Contains(r.stderr, "--context") || strings.Contains(r.stderr, "context_lines") {
		t.Fatalf("over budget %q %q", r.stdout, r.stderr)
	}
}

// TestViewArgumentsBeforeStorage: a malformed pattern or filter is a usage
// error before any storage access (the workspace below cannot be opened,
// which would be exit 1).
func TestViewArgumentsBeforeStorage(t *testing.T) {
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(blocked, "ws") // a path under a file: cannot be created
	ref := "artifact://sha256/" + strings.Repeat("a", 64)
	for _, args := range [][]string{
		{"search", ref, "a(", "--regex", "--budget", "10"},
		{"search", ref, strings.Repeat("x", 1001), "--budget", "10"},
		{"search", ref, "x", "--context", "11", "--budget", "10"},
		{"search", ref, "x"},
		{"query", ref, ".[", "--budget", "10"},
		{"query", ref, "$ENV", "--budget", "10"},
		{"query", ref, "input", "--budget", "10"},
		{"query", ref, ".", "--budget", "0"},
	} {
		r := run(t, host(ws, args...)...)
		wantCode(t, r, ExitUsage)
		if strings.Contains(r.stderr, "a(") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
	wantCode(t, run(t, host(ws, "search", ref, "x", "--budget", "10")...), ExitInternal)
}

func TestQueryCommand(t *testing.T) {
	ws := newWorkspace(t)
	doc := `{"jobs":[` + strings.Repeat(`{"name":"build","ok":true},`, 50) + `{"name":"deploy","ok":false,"error":"quota"}]}`
	ref := offloadRef(t, ws, []byte(doc)).String()
	r := run(t, host(ws, "query", ref, `.jobs[] | select(.ok | not) | .error`, "--budget", "4096")...)
	wantCode(t, r, ExitOK)
	if r.stdout != "\"quota\"\n" || r.stderr != "hybridctx: 1 result (showing 1-1)\n" {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	r = run(t, host(ws, "query", ref, `.jobs[].name`, "--budget", "60", "--skip", "10")...)
	k := strings.Count(r.stdout, "\n") // the results the budget held
	if k == 0 || r.stdout != strings.Repeat("\"build\"\n", k) ||
		r.stderr != fmt.Sprintf("hybridctx: 51 results (showing 11-%d); continue with --skip %d\n", 10+k, 10+k) {
		t.Fatalf("paged %q %q", r.stdout, r.stderr)
	}
	// Standard output is JSON values alone, one per line: "| jq ." reads it.
	paged := r.stdout
	r = run(t, host(ws, "query", ref, `.jobs[]`, "--budget", "600")...)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	n := 0
	for ; dec.More(); n++ {
		var v struct{ Name string }
		if err := dec.Decode(&v); err != nil || v.Name == "" {
			t.Fatalf("value %d of %q: %v", n, r.stdout, err)
		}
	}
	if n == 0 || strings.Count(r.stdout, "\n") != n || !strings.HasPrefix(r.stderr, "hybridctx: 51 results (showing 1-") {
		t.Fatalf("%d values in %q, stderr %q", n, r.stdout, r.stderr)
	}
	js := run(t, host(ws, "--json", "query", ref, `.jobs[].name`, "--budget", "60", "--skip", "10")...)
	jm := decodeObject(t, js.stdout)
	if str(t, jm["answer"]) != paged || str(t, jm["summary"]) != fmt.Sprintf("51 results (showing 11-%d)", 10+k) ||
		!strings.Contains(string(jm["page"]), fmt.Sprintf(`"next":%d`, 10+k)) {
		t.Fatalf("json %s", js.stdout)
	}
	for filter, reason := range map[string]string{".jobs.x": "filter_error", `"x" * 10000000`: "limit_exceeded"} {
		r = run(t, host(ws, "query", ref, filter, "--budget", "4096")...)
		wantCode(t, r, ExitViewFailed)
		if r.stdout != "" || !strings.HasPrefix(r.stderr, "hybridctx: view_failed ("+reason+")") {
			t.Fatalf("%s: %q %q", filter, r.stdout, r.stderr)
		}
	}
	wantCode(t, run(t, host(ws, "query", ref, ".", "--budget", "4096", "--query-max-bytes", "100")...), ExitViewFailed)
	text := offloadRef(t, ws, cliLog(100)).String()
	r = run(t, host(ws, "query", text, ".", "--budget", "4096")...)
	if !strings.Contains(r.stderr, "use hybridctx search") || strings.Contains(r.stderr, "_artifact") {
		t.Fatalf("not json: %q", r.stderr)
	}
	js = run(t, host(ws, "--json", "query", text, ".", "--budget", "4096")...)
	wantCode(t, js, ExitViewFailed)
	var v struct {
		Outcome, Reason string
	}
	if json.Unmarshal([]byte(js.stdout), &v) != nil || v.Outcome != "view_failed" || v.Reason != "not_json" || js.stderr != "" {
		t.Fatalf("json %q %q", js.stdout, js.stderr)
	}
}

func TestRetrievalPolicyFlags(t *testing.T) {
	ws := newWorkspace(t)
	r := withInput(t, cliLog(50), host(ws, "offload", "--threshold", "16", "--preview-bytes", "40")...)
	wantCode(t, r, ExitOK)
	if !strings.HasSuffix(r.stdout, "\nIt begins:\n00001 request ok\n00002 request ok\n") {
		t.Fatalf("preview %q", r.stdout)
	}
	for _, args := range [][]string{
		{"offload", "--threshold", "16", "--preview-bytes", "-1"},
		{"offload", "--threshold", "16", "--preview-bytes", "5000"},
		{"mcp", "--tool-threshold", "noequals", "--", "true"},
		{"mcp", "--tool-threshold", "x=0", "--", "true"},
		{"mcp", "--tool-threshold", "=5", "--", "true"},
		{"mcp", "--query-max-bytes", "-1", "--", "true"},
		{"demo", "--preview-bytes", "-3", "--workspace", "mem://"},
	} {
		r := withInput(t, []byte("x"), host(ws, args...)...)
		wantCode(t, r, ExitUsage)
	}
}
