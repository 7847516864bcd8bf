package hybridctx_test

import (
	"testing"

	"github.com/hybridctx/hybridctx"
)

// TestPagedAnswerSplit: a search or query answer is its items, then the
// summary line; Page says where one ends and what the other counts, and
// Next where to continue, so a host can show them apart.
func TestPagedAnswerSplit(t *testing.T) {
	e := newEnv(t, 4)
	logRef := stored(t, e, logBody(1000)).String()
	jsonRef := stored(t, e, `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]`).String()
	cases := []struct {
		name         string
		rh           *hybridctx.Rehydration
		items, sum   string
		next         int64
		continuation string
	}{
		{"search, more remain",
			mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: logRef, Budget: 4096, Pattern: "line 99", MaxMatches: 3})),
			"99:line 99 ok\n990:line 990 ok\n991:line 991 ok\n", "11 matches (showing 1-3)", 3, "; continue with skip 3"},
		{"search, none",
			mustView(t)(e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: logRef, Budget: 4096, Pattern: "absent"})),
			"", "0 matches (showing none)", 0, ""},
		{"query, cut by the budget",
			mustView(t)(e.reh.Query(e.ctx, hybridctx.QueryRequest{Reference: jsonRef, Budget: 60, Filter: ".[]", Skip: 1})),
			"2\n3\n4\n5\n6\n7\n", "20 results (showing 2-7)", 7, "; continue with skip 7"},
		{"query, all",
			mustView(t)(e.reh.Query(e.ctx, hybridctx.QueryRequest{Reference: jsonRef, Budget: 4096, Filter: ".[0]"})),
			"1\n", "1 result (showing 1-1)", 0, ""},
	}
	for _, c := range cases {
		b := string(c.rh.Segment.Bytes())
		p := c.rh.Page
		if p.ItemBytes > int64(len(b)) || b[:p.ItemBytes] != c.items || p.Summary != c.sum || p.Next != c.next ||
			b[p.ItemBytes:] != c.sum+c.continuation+"\n" {
			t.Errorf("%s: answer %q, page %+v", c.name, b, p)
		}
	}
	lines := mustView(t)(e.reh.ReadLines(e.ctx, hybridctx.LinesRequest{Reference: logRef, Budget: 4096, StartLine: 1, LineCount: 2}))
	if lines.Page.Summary != "" || lines.Page.ItemBytes != 0 {
		t.Errorf("lines page %+v", lines.Page)
	}
}
