package viewengine

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// feed hands body to scan in chunks of size step, as the pump does.
func feed(t *testing.T, sc Scanner, body []byte, step int) Answer {
	t.Helper()
	for off := 0; off < len(body); off += step {
		if err := sc.Scan(int64(off), body[off:min(off+step, len(body))]); err != nil {
			t.Fatal(err)
		}
	}
	return sc.Answer(context.Background(), int64(len(body)))
}

// naiveLines splits body into lines the way docs/offload.md counts them: each ends with
// its LF; a last line without LF counts when non-empty.
func naiveLines(body []byte) [][]byte {
	var out [][]byte
	for len(body) > 0 {
		i := bytes.IndexByte(body, '\n')
		if i < 0 {
			out = append(out, body)
			break
		}
		out = append(out, body[:i+1])
		body = body[i+1:]
	}
	return out
}

// FuzzLines checks the lines view against a naive split: the exact bytes of
// the whole lines that fit, where to continue, and over_budget exactly when
// the first requested line alone is larger than the budget.
func FuzzLines(f *testing.F) {
	f.Add([]byte("a\nbb\nccc\ndddd"), uint16(2), uint16(2), uint16(5), uint8(3))
	f.Add([]byte("\n\n\nx"), uint16(1), uint16(0), uint16(1), uint8(1))
	f.Add([]byte(strings.Repeat("line\n", 100)), uint16(50), uint16(100), uint16(37), uint8(7))
	f.Fuzz(func(t *testing.T, body []byte, start, count, budget uint16, step uint8) {
		if start == 0 || budget == 0 || step == 0 {
			return
		}
		n := int64(count)
		if n == 0 {
			n = 100
		}
		a := feed(t, NewLines(int64(start), n, int64(budget)), body, int(step))
		lines := naiveLines(body)
		if a.Page.Total != int64(len(lines)) {
			t.Fatalf("total %d, want %d", a.Page.Total, len(lines))
		}
		var want []byte
		next := int64(0)
		for i := int64(start); i < int64(start)+n && i <= int64(len(lines)); i++ {
			l := lines[i-1]
			if len(want)+len(l) > int(budget) {
				next = i
				break
			}
			want = append(want, l...)
		}
		if next == int64(start) {
			if a.Outcome != OverBudget || a.Page.LineLength != int64(len(lines[start-1])) ||
				!bytes.Equal(body[a.Page.LineOffset:a.Page.LineOffset+a.Page.LineLength], lines[start-1]) {
				t.Fatalf("want over_budget with line %d located, got %v %+v", start, a.Outcome, a.Page)
			}
			return
		}
		if a.Outcome != Resolved || !bytes.Equal(a.Body, want) || a.Page.Next != next {
			t.Fatalf("got %v %q next %d, want %q next %d", a.Outcome, a.Body, a.Page.Next, want, next)
		}
		if len(want) > 0 && !bytes.Equal(body[a.Offset:a.Offset+int64(len(want))], want) {
			t.Fatalf("offset %d does not locate the answer", a.Offset)
		}
	})
}

// FuzzSearchAnswer checks the search answer against a naive per-line
// search: at most the budget, valid UTF-8, every match counted, and the
// matches shown are the right lines, in order, from skip+1.
func FuzzSearchAnswer(f *testing.F) {
	f.Add([]byte("error one\nok\nerror two\n\xff error\n"), "error", uint16(200), uint8(0), uint8(0), uint8(5), false)
	f.Add([]byte(strings.Repeat("a", 700)+"NEEDLE"+strings.Repeat("b", 700)+"\nNEEDLE\n"), "NEEDLE", uint16(2000), uint8(1), uint8(0), uint8(64), false)
	f.Add([]byte("x\ny\nx\ny\nx\n"), "x", uint16(60), uint8(1), uint8(1), uint8(2), true)
	f.Fuzz(func(t *testing.T, body []byte, pattern string, budget uint16, ctxN, skip, step uint8, ignoreCase bool) {
		if pattern == "" || len(pattern) > 64 || budget == 0 || step == 0 || strings.Contains(pattern, "\n") {
			return
		}
		ctxLines, skipN := int(ctxN%4), int64(skip%8)
		m, err := NewMatcher(pattern, false, ignoreCase)
		if err != nil {
			return // invalid UTF-8 regardless of case is no RE2 expression
		}
		sc := newSearchScan(m, ctxLines, skipN, 50, int64(budget))
		sc.lineCap = 1024 + len(pattern) // exercise the windows of long lines
		a := feed(t, sc, body, int(step))
		var matches []int64
		for i, l := range naiveLines(body) {
			l = bytes.TrimSuffix(l, []byte("\n"))
			if m.Find(l) >= 0 {
				matches = append(matches, int64(i+1))
			}
		}
		if a.Page.Total != int64(len(matches)) {
			t.Fatalf("total %d, want %d", a.Page.Total, len(matches))
		}
		if a.Outcome == OverBudget {
			if a.Observed <= int64(budget) {
				t.Fatalf("over_budget though %d bytes would fit %d", a.Observed, budget)
			}
			return
		}
		if int64(len(a.Body)) > int64(budget) || !utf8.Valid(a.Body) {
			t.Fatalf("answer of %d bytes over budget %d or not UTF-8", len(a.Body), budget)
		}
		var shown []int64
		for _, line := range strings.Split(strings.TrimSuffix(string(a.Body), "\n"), "\n") {
			i := strings.IndexAny(line, ":-")
			if i <= 0 || line[i] != ':' {
				continue
			}
			if n, err := strconv.ParseInt(line[:i], 10, 64); err == nil {
				shown = append(shown, n)
			}
		}
		if int64(len(shown)) != a.Page.Count {
			t.Fatalf("%d match lines shown, page says %d:\n%s", len(shown), a.Page.Count, a.Body)
		}
		for k, n := range shown {
			if idx := int(skipN) + k; idx >= len(matches) || matches[idx] != n {
				t.Fatalf("match %d shown as line %d; matches %v", idx+1, n, matches)
			}
		}
	})
}
