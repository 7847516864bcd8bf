package hybridctx_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
)

func mustView(t *testing.T) func(*hybridctx.Rehydration, error) *hybridctx.Rehydration {
	return func(r *hybridctx.Rehydration, err error) *hybridctx.Rehydration {
		t.Helper()
		if err != nil {
			t.Fatalf("view: %v", err)
		}
		return r
	}
}

func logBody(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i == n/2 {
			fmt.Fprintf(&b, "line %d ERROR disk full\n", i)
			continue
		}
		fmt.Fprintf(&b, "line %d ok\n", i)
	}
	return b.String()
}

func TestReadLines(t *testing.T) {
	e := newEnv(t, 4)
	body := "a\nbb\nccc\ndddd" // 4 lines, last without LF
	ref := stored(t, e, body).String()
	cases := []struct {
		start, count, budget int64
		want                 string
		next, total          int64
	}{
		{1, 0, 100, body, 0, 4},
		{2, 2, 100, "bb\nccc\n", 0, 4},
		{4, 5, 100, "dddd", 0, 4},
		{5, 1, 100, "", 0, 4},
		{1, 4, 5, "a\nbb\n", 3, 4},
		{3, 1, 4, "ccc\n", 0, 4},
	}
	for _, c := range cases {
		rh := mustView(t)(e.reh.ReadLines(e.ctx, hybridctx.LinesRequest{Reference: ref, Budget: c.budget, StartLine: c.start, LineCount: c.count}))
		expect(t, rh.Outcome(), rh.Reason(), hybridctx.Resolved, hybridctx.DigestVerified)
		if got := string(rh.Segment.Bytes()); got != c.want || rh.Page.Next != c.next || rh.Page.Total != c.total {
			t.Errorf("%+v: got %q page %+v", c, got, rh.Page)
		}
		if rh.Diagnostics().View() != hybridctx.ViewLines {
			t.Fatal("view not set")
		}
		if n, _ := rh.Diagnostics().ObservedBytes(); n != int64(len(c.want)) {
			t.Errorf("observed %d", n)
		}
		if int64(strings.Index(body, c.want)) != rh.Segment.Offset() && c.want != "" {
			t.Errorf("offset %d", rh.Segment.Offset())
		}
	}
	rh := mustView(t)(e.reh.ReadLines(e.ctx, hybridctx.LinesRequest{Reference: ref, Budget: 3, StartLine: 3}))
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.OverBudget, hybridctx.BudgetExceeded)
	if rh.Page.LineOffset != 5 || rh.Page.LineLength != 4 || rh.Segment != nil {
		t.Fatalf("over budget page %+v", rh.Page)
	}
}

func TestSearchBasic(t *testing.T) {
	e := newEnv(t, 4)
	body := logBody(1000)
	ref := stored(t, e, body).String()
	rh := mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 4096, Pattern: "ERROR"}))
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.Resolved, hybridctx.DigestVerified)
	want := "500:line 500 ERROR disk full\n1 match (showing 1-1)\n"
	if got := string(rh.Segment.Bytes()); got != want {
		t.Fatalf("got %q", got)
	}
	rh = mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 4096, Pattern: `ERR\w+`, Regex: true, ContextLines: 1}))
	want = "499-line 499 ok\n500:line 500 ERROR disk full\n501-line 501 ok\n1 match (showing 1-1)\n"
	if got := string(rh.Segment.Bytes()); got != want {
		t.Fatalf("got %q", got)
	}
	rh = mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 4096, Pattern: "line 99", MaxMatches: 3}))
	want = "99:line 99 ok\n990:line 990 ok\n991:line 991 ok\n11 matches (showing 1-3); continue with skip 3\n"
	if got := string(rh.Segment.Bytes()); got != want {
		t.Fatalf("got %q", got)
	}
	rh = mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 4096, Pattern: "nothing"}))
	if got := string(rh.Segment.Bytes()); got != "0 matches (showing none)\n" {
		t.Fatalf("got %q", got)
	}
}

func TestQueryBasic(t *testing.T) {
	e := newEnv(t, 4)
	body := `{"items":[{"id":1,"name":"a"},{"id":2,"name":"b"}],"total":2}`
	ref := stored(t, e, body).String()
	rh := mustView(t)(e.reh.Query(e.ctx, hybridctx.QueryRequest{Reference: ref, Budget: 4096, Filter: ".items[] | select(.id==2)"}))
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.Resolved, hybridctx.DigestVerified)
	if got := string(rh.Segment.Bytes()); got != "{\"id\":2,\"name\":\"b\"}\n1 result (showing 1-1)\n" {
		t.Fatalf("got %q", got)
	}
	rh = mustView(t)(e.reh.Query(e.ctx, hybridctx.QueryRequest{Reference: ref, Budget: 4096, Filter: `[(1,2) * (3,4)], "ab" * 2`}))
	if got := string(rh.Segment.Bytes()); got != "[3,6,4,8]\n\"abab\"\n2 results (showing 1-2)\n" {
		t.Fatalf("got %q", got)
	}
	for _, f := range []string{"env", "$ENV", "input", "[inputs]", "debug", `"a" | stderr`, "input_filename", `import "a" as a; .`, "_multiply(1;2)", ". *= 2", "{", ""} {
		if _, err := e.reh.Query(e.ctx, hybridctx.QueryRequest{Reference: ref, Budget: 10, Filter: f}); !errors.Is(err, hybridctx.ErrInvalidRequest) {
			t.Errorf("%q: %v", f, err)
		}
	}
	for f, r := range map[string]hybridctx.Reason{".items.x": hybridctx.FilterError, `"x" * 100000000`: hybridctx.LimitExceeded,
		"[range(1e9)]": hybridctx.LimitExceeded, "def f: f; f": hybridctx.LimitExceeded, "repeat(1)": hybridctx.LimitExceeded} {
		start := time.Now()
		rh := mustView(t)(e.reh.Query(e.ctx, hybridctx.QueryRequest{Reference: ref, Budget: 100, Filter: f}))
		expect(t, rh.Outcome(), rh.Reason(), hybridctx.ViewFailed, r)
		t.Logf("%s: %v", f, time.Since(start))
	}
	txt := stored(t, e, "not json at all")
	rh = mustView(t)(e.reh.Query(e.ctx, hybridctx.QueryRequest{Reference: txt.String(), Budget: 100, Filter: "."}))
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.ViewFailed, hybridctx.NotJSON)
	_ = context.Background
}
