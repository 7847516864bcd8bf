package classify

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// withLimit lowers the JSON scan limit for the duration of the test.
func withLimit(t *testing.T, n int64) {
	t.Helper()
	old := scanLimit
	scanLimit = n
	t.Cleanup(func() { scanLimit = old })
}

func TestScanLimitConst(t *testing.T) {
	if JSONScanLimit != 64<<10 || scanLimit != JSONScanLimit {
		t.Fatalf("JSONScanLimit = %d, scanLimit = %d; want both %d", JSONScanLimit, scanLimit, 64<<10)
	}
}

// TestScanLimitRule checks the documented rule for streams longer than
// the limit: JSON iff the first non-whitespace byte is '{' or '[', the
// first limit bytes hold no syntax error and the last non-whitespace byte
// is '}' or ']'.
func TestScanLimitRule(t *testing.T) {
	const limit = 16
	withLimit(t, limit)
	pad := strings.Repeat(" ", 20)
	for _, tc := range []struct {
		name, in string
		want     Kind
	}{
		{"valid object, padded", `{"a": 1}` + pad, JSON},
		{"valid array", "[1,2,3,4,5,6,7,8,9,10]", JSON},
		{"error inside limit", "[1,2,3,4,5,6,7,]" + pad, Text},
		{"error just past limit", "[1,2,3,4,5,6,7,8,]", JSON},
		{"garbage past limit", "[1,2,3,4,5,6,78]xyz", Text},
		{"garbage past limit, closed", "[1,2,3,4,5,6,78]xyz]", JSON},
		{"object closed by bracket", `{"a":"` + strings.Repeat("x", 40) + "]", JSON},
		{"array closed by brace", "[" + strings.Repeat("1,", 40) + "}", JSON},
		{"closer then spaces", "[" + strings.Repeat("1,", 10) + "1]" + pad, JSON},
		{"closer then tab CR LF", "[" + strings.Repeat("1,", 10) + "1]\t\r\n", JSON},
		{"unterminated string", `{"a":"` + strings.Repeat("x", 40), Text},
		{"unclosed array", "[" + strings.Repeat("1,", 40), Text},
		{"ends in a quote", `{"a":"` + strings.Repeat("x", 40) + `"`, Text},
		{"ends in NBSP", "[" + strings.Repeat("1,", 10) + "1]\u00a0", Text},
		{"scalar string", `"` + strings.Repeat("x", 30) + `"`, Text},
		{"scalar number", "12345678901234567890", Text},
		{"scalar literal padded", "true" + pad, Text},
		{"whitespace only", pad, Text},
		{"first byte past limit", pad + "{}", JSON},
		{"first array past limit, unclosed", pad + "[", Text},
		{"first array past limit, closed", pad + "[]", JSON},
		{"first text past limit", pad + "x", Text},
		{"first byte at limit-1", strings.Repeat(" ", limit-1) + "[xyz]", JSON},
		{"first byte at limit", strings.Repeat(" ", limit) + "[xyz]", JSON},
		{"first byte at limit, unclosed", strings.Repeat(" ", limit) + "[xyz", Text},
		{"text", "hello world, this is text", Text},
		{"text ending in a bracket", "hello world, this is text]", Text},
		{"text starting with t", "the quick brown fox", Text},
		{"binary past limit in object", `{"a": 1}` + pad + "\xff}", Binary},
		{"binary at the end of an object", `{"a": 1}` + pad + "\xff", Binary},
		{"binary past limit in text", "hello world, this is \xff", Binary},
		{"binary past limit in scalar", `"` + strings.Repeat("x", 30) + "\xe2", Binary},
		{"split rune past limit", `"` + strings.Repeat("x", 30) + "€", Text},
		{"exactly limit, valid", "[1,2,3,4,5,6,78]", JSON},
		{"exactly limit, error", "[1,2,3,4,5,6,7,]", Text},
		{"exactly limit, unclosed", "[1,2,3,4,5,6,789", Text},
		{"limit+1, closed after", "[1,2,3,4,5,6,789]", JSON},
		{"exactly limit, scalar", `"12345678901234"`, JSON},
	} {
		b := []byte(tc.in)
		checkAllSplits(t, tc.name, b, tc.want, refLines(b))
		if len(b) > limit {
			continue
		}
		if ref := refKind(b); ref != tc.want {
			t.Errorf("%s: table says %v, standard library says %v", tc.name, tc.want, ref)
		}
	}
}

// refKindLimited is the specification of Kind with the scan limit set to
// limit, computed with the standard library.
func refKindLimited(b []byte, limit int) Kind {
	if len(b) <= limit || !utf8.Valid(b) {
		return refKind(b)
	}
	top := byte(0)
	for _, c := range b {
		if !isSpaceRef(c) {
			top = c
			break
		}
	}
	if top == '{' || top == '[' {
		// The standard library reports where the first syntax error is:
		// Offset counts the bytes read up to and including the bad one.
		last := byte(0)
		for i := len(b) - 1; i >= 0; i-- {
			if !isSpaceRef(b[i]) {
				last = b[i]
				break
			}
		}
		// Into a RawMessage: only syntax is checked (a number out of
		// float64's range, as in 10e700, is valid JSON).
		var v json.RawMessage
		err := json.Unmarshal(b, &v)
		var se *json.SyntaxError
		if (last == '}' || last == ']') && (err == nil || errors.As(err, &se) && se.Offset > int64(limit)) {
			return JSON
		}
	}
	if !utf8.Valid(b) {
		return Binary
	}
	return Text
}

func isSpaceRef(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// TestScanLimitRandom compares random JSON-like inputs fed in random
// splits under random small limits with refKindLimited.
func TestScanLimitRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	frags := []string{
		"{", "}", "[", "]", `"k"`, ":", ",", "0", "-1.5e3", "true", "null", " ", "\n",
		`"é\u00e9"`, "\xff", "x", `"\`, "01", "\t",
	}
	n := 4000
	if testing.Short() {
		n = 500
	}
	for range n {
		var sb strings.Builder
		if r.IntN(2) == 0 {
			sb.WriteString([]string{"{", "[", " [", `{"a":`}[r.IntN(4)])
		}
		for range r.IntN(12) {
			sb.WriteString(frags[r.IntN(len(frags))])
		}
		b := []byte(sb.String())
		if len(b) == 0 {
			continue
		}
		limit := 1 + r.IntN(len(b)+2)
		withLimitFor(limit, func() {
			want := refKindLimited(b, limit)
			c := feed(t, b, randomSplits(r))
			if got := c.Kind(); got != want {
				t.Errorf("%q with limit %d: Kind = %v, want %v", b, limit, got, want)
			}
		})
	}
}

func withLimitFor(n int, f func()) {
	old := scanLimit
	scanLimit = int64(n)
	defer func() { scanLimit = old }()
	f()
}
