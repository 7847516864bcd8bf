package classify

import (
	"math/rand/v2"
	"testing"
)

// maxFuzzLen bounds the part of a fuzz input that is classified.
const maxFuzzLen = 512

// FuzzClassify checks the classifier, fed in random splits derived from
// seed and one byte at a time, against json.Valid, utf8.Valid and
// bytes.Count applied to the whole input (exact: the input is shorter than
// JSONScanLimit), then, with the scan limit lowered to a length derived
// from seed, against the long-stream rule (refKindLimited).
func FuzzClassify(f *testing.F) {
	for i, tc := range kindCases {
		f.Add([]byte(tc.in), uint64(i))
	}
	f.Add([]byte(`{"id":1,"tags":["a","b"],"n":{"x":null,"y":-0.5E+2}}`), uint64(99))
	f.Add([]byte("line one\nline two é\n\xe2\x82"), uint64(7))
	// Long-stream rule: closed after garbage past the limit, unclosed, a
	// trailing non-closer, invalid UTF-8 before the closer.
	f.Add([]byte(`[1,2,3]xyz] `), uint64(3<<8))
	f.Add([]byte(`{"a":[1,2,3`), uint64(2<<8))
	f.Add([]byte(`{"a":1} x`), uint64(4<<8))
	f.Add([]byte("{\"a\":\"\xff\"} \xfe}"), uint64(5<<8))
	for i, s := range edgeSeeds {
		f.Add([]byte(s), uint64(i)<<8|uint64(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		// Long inputs add little here (TestDepth and TestScanLimitRule
		// cover length-dependent behaviour) but make the fuzzer's
		// quadratic input minimization stall for tens of seconds.
		if len(data) > maxFuzzLen {
			data = data[:maxFuzzLen]
		}
		wantKind, wantLines := refKind(data), refLines(data)
		r := rand.New(rand.NewPCG(seed, seed>>32))
		ways := []func(int) int{randomSplits(r)}
		// Feeding long inputs byte by byte would make each run, and so
		// minimization, quadratic; random splits already use many 1-4
		// byte chunks.
		if len(data) <= 256 {
			ways = append(ways, oneByte)
		}
		for i, next := range ways {
			how := [...]string{"randomly", "bytewise"}[i]
			c := feed(t, data, next)
			if got := c.Kind(); got != wantKind {
				t.Errorf("fed %s: Kind = %v, want %v", how, got, wantKind)
			}
			if got := c.Lines(); got != wantLines {
				t.Errorf("fed %s: Lines = %d, want %d", how, got, wantLines)
			}
			if got := c.Bytes(); got != int64(len(data)) {
				t.Errorf("fed %s: Bytes = %d, want %d", how, got, len(data))
			}
		}
		if k, l := Of(data); k != wantKind || l != wantLines {
			t.Errorf("Of = %v, %d; want %v, %d", k, l, wantKind, wantLines)
		}
		limit := 1 + int(seed>>8%uint64(len(data)+2))
		withLimitFor(limit, func() {
			want := refKindLimited(data, limit)
			c := feed(t, data, randomSplits(r))
			if got := c.Kind(); got != want {
				t.Errorf("limit %d: Kind = %v, want %v", limit, got, want)
			}
			if got := c.Lines(); got != wantLines {
				t.Errorf("limit %d: Lines = %d, want %d", limit, got, wantLines)
			}
		})
	})
}

// edgeSeeds are inputs at the edges of the grammar and of the scanner's
// fast paths: escapes and backslash runs at 8-byte boundaries, numbers at
// the limits of their grammar, a byte-order mark, lone surrogates (valid
// JSON escapes), trailing garbage, non-ASCII bytes in and out of strings.
var edgeSeeds = []string{
	`["1234567\"", "12345678\\", "123456\\\"x"]`,
	`{"abcdefg":"\u00e9\ud800\udfff\uDBFF","k":"\/\b\f\n\r\t"}`,
	`[-0, -0.0, 0e0, 0E+1, 1e-1, 123456789012345678901234567890]`,
	`[01]`, `[1e+]`, `[1.]`, `[-]`, `[.5]`, `[+1]`, `[1.5e]`, `-`, `0x1`,
	"\xef\xbb\xbf{}", `{} x`, `[1,2]]`, `{"a":1,}`, `[tru]`, `[nulll]`,
	"[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x99\x82\", \"\xed\xa0\x80\"]",
	"[\"\xc3\"]", "[\xc3\xa9]", "\"a\x00b\"", "[\"\t\"]",
	"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
	"  \n\t\r  {\"a\" \n : \n [ \"b\" , 1 , true ] }  \n",
}
