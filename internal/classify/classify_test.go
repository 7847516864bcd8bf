package classify

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
)

// maxDepth is the deepest nesting json.Valid accepts.
const maxDepth = jsonstream.MaxNesting

// refKind is the specification of Kind, computed with the standard library
// on the whole input.
func refKind(b []byte) Kind {
	switch {
	case len(b) == 0:
		return Text
	case !utf8.Valid(b):
		return Binary
	case json.Valid(b):
		return JSON
	}
	return Text
}

// refLines is the specification of Lines.
func refLines(b []byte) int64 {
	n := int64(bytes.Count(b, []byte{'\n'}))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// feed writes b to a new Classifier in chunks whose lengths come from next.
func feed(t testing.TB, b []byte, next func(rest int) int) *Classifier {
	t.Helper()
	c := new(Classifier)
	for len(b) > 0 {
		k := next(len(b))
		n, err := c.Write(b[:k])
		if n != k || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", k, n, err)
		}
		b = b[k:]
	}
	return c
}

func whole(rest int) int   { return rest }
func oneByte(rest int) int { return 1 }

func randomSplits(r *rand.Rand) func(int) int {
	return func(rest int) int {
		switch r.IntN(4) {
		case 0:
			return 1 + r.IntN(min(rest, 4))
		case 1:
			return rest
		default:
			return 1 + r.IntN(rest)
		}
	}
}

// checkAllSplits feeds b at once, one byte at a time and in random splits,
// and checks every result against want.
func checkAllSplits(t *testing.T, name string, b []byte, want Kind, wantLines int64) {
	t.Helper()
	splits := map[string]func(int) int{"whole": whole, "bytewise": oneByte}
	for seed := range uint64(4) {
		splits["random"+itoa(int(seed))] = randomSplits(rand.New(rand.NewPCG(seed, uint64(len(b)))))
	}
	for how, next := range splits {
		c := feed(t, b, next)
		if got := c.Kind(); got != want {
			t.Errorf("%s fed %s: Kind = %v, want %v", name, how, got, want)
		}
		if got := c.Lines(); got != wantLines {
			t.Errorf("%s fed %s: Lines = %d, want %d", name, how, got, wantLines)
		}
		if got := c.Bytes(); got != int64(len(b)) {
			t.Errorf("%s fed %s: Bytes = %d, want %d", name, how, got, len(b))
		}
	}
	if k, l := Of(b); k != want || l != wantLines {
		t.Errorf("%s: Of = %v, %d; want %v, %d", name, k, l, want, wantLines)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Text: "text", JSON: "json", Binary: "binary", 7: "kind(7)", 255: "kind(255)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"", 0},
		{"a", 1},
		{"a\n", 1},
		{"a\nb", 2},
		{"\n\n", 2},
		{"\n", 1},
		{"a\r\nb\r\n", 2},
		{"a\rb", 1},
		{"\n\nx", 3},
	} {
		c := feed(t, []byte(tc.in), whole)
		if got := c.Lines(); got != tc.want {
			t.Errorf("Lines(%q) = %d, want %d", tc.in, got, tc.want)
		}
		checkAllSplits(t, strings.ReplaceAll(tc.in, "\n", `\n`), []byte(tc.in), refKind([]byte(tc.in)), tc.want)
	}
}

var kindCases = []struct {
	in   string
	want Kind
}{
	// empty and whitespace
	{"", Text},
	{" ", Text},
	{" \t\r\n", Text},
	{"\v", Text},
	{"\u00a0{}", Text},
	// plain text
	{"hello", Text},
	{"hello\nworld\n", Text},
	{"héllo wörld 日本語 🙂", Text},
	{"the end", Text},
	{"nul", Text},
	{"nullx", Text},
	{"truefalse", Text},
	// top-level scalars
	{"0", JSON},
	{"-0", JSON},
	{" 7 ", JSON},
	{"1e5", JSON},
	{"1E+5", JSON},
	{"1e-05", JSON},
	{"-12.5e3", JSON},
	{"0.0", JSON},
	{"123456789012345678901234567890", JSON},
	{`""`, JSON},
	{`"x"`, JSON},
	{"true", JSON},
	{"false", JSON},
	{"null", JSON},
	{" null\n", JSON},
	{"\r\n{\r\n\t\"a\"\r:\r1\r}\r\n", JSON},
	{"[\t1\t,\n2\r]", JSON},
	{"\v1", Text},
	{"1\f", Text},
	{"[1,\u00a02]", Text},
	// bad numbers
	{"01", Text},
	{"-01", Text},
	{"1.", Text},
	{".5", Text},
	{"-", Text},
	{"+1", Text},
	{"1e", Text},
	{"1e+", Text},
	{"1.e5", Text},
	{"0x10", Text},
	{"1 2", Text},
	{"- 1", Text},
	{"NaN", Text},
	{"Infinity", Text},
	{"tru", Text},
	{"True", Text},
	{"nulL", Text},
	// containers
	{"{}", JSON},
	{"[]", JSON},
	{" [ ] ", JSON},
	{`{"a":1}`, JSON},
	{"{ \"a\" : [1, 2.5, -3e2, true, false, null, \"s\", {}] }\n", JSON},
	{`[[[[]]],{"":{"":[]}}]`, JSON},
	{`{"a":1,"a":2}`, JSON},
	{"[1,]", Text},
	{`{"a":1,}`, Text},
	{"[,1]", Text},
	{"[1 2]", Text},
	{`{"a" 1}`, Text},
	{`{"a":}`, Text},
	{`{a:1}`, Text},
	{`{1:1}`, Text},
	{`{"a":1 "b":2}`, Text},
	{"[", Text},
	{"]", Text},
	{"[}", Text},
	{"{]", Text},
	{"[]]", Text},
	{"{}}", Text},
	{"[][]", Text},
	{"{} {}", Text},
	{"[1]x", Text},
	{`{"a":[1}`, Text},
	{`{"a"`, Text},
	{`{"a":`, Text},
	// strings and escapes
	{`"\u00e9"`, JSON},
	{`"\u00E9\uD83D\uDE00"`, JSON},
	{`"\ud800"`, JSON},
	{`"\"\\\/\b\f\n\r\t"`, JSON},
	{`"\x41"`, Text},
	{`"\a"`, Text},
	{`"\u00g0"`, Text},
	{`"\u00e"`, Text},
	{`"\u12"`, Text},
	{`"\`, Text},
	{`"abc`, Text},
	{`'abc'`, Text},
	{"\"a\tb\"", Text},
	{"\"a\nb\"", Text},
	{"\"\x00\"", Text},
	{"\"\x1f\"", Text},
	{"\"\x7f\"", JSON},
	{"\"é日本🙂\"", JSON},
	{"[\"" + strings.Repeat("long string without specials ", 20) + "\"]", JSON},
	{"[\"" + strings.Repeat("abcdefg\\\"", 20) + "\"]", JSON},
	{"[\"" + strings.Repeat("abcdefgh", 20) + "\x01\"]", Text},
	// invalid UTF-8
	{"\xff", Binary},
	{"abc\xffdef", Binary},
	{"\xc0\x80", Binary},
	{"\xed\xa0\x80", Binary},
	{"\xf4\x90\x80\x80", Binary},
	{"\xe2\x82", Binary},
	{"x\xf0\x9f\x99", Binary},
	{"\x80", Binary},
	{"{\xff}", Binary},
	{"[1]\xff", Binary},
	{"\xef\xbb\xbf{}", Text},
	// invalid UTF-8 inside a JSON string: json.Valid accepts it, and it is
	// binary all the same (docs/offload.md)
	{"\"\xff\"", Binary},
	{"{\"k\xc0\":\"\xed\xa0\x80\xe2\x82\"}", Binary},
	{"[\"\xf0\x9f\x99\"]", Binary},
	{"[\"\xf0\x9f\x99", Binary},
}

func TestKinds(t *testing.T) {
	for _, tc := range kindCases {
		b := []byte(tc.in)
		if ref := refKind(b); ref != tc.want {
			t.Errorf("case %q: table says %v but the standard library says %v", tc.in, tc.want, ref)
		}
		checkAllSplits(t, "case "+strconvQuote(tc.in), b, tc.want, refLines(b))
	}
}

func strconvQuote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return "`" + s + "`"
}

func TestDepth(t *testing.T) {
	nest := func(open, close string, n int) []byte {
		return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
	}
	mixed := func(n int) []byte {
		var b bytes.Buffer
		for i := range n {
			if i%3 == 0 {
				b.WriteString(`{"k":`)
			} else {
				b.WriteString("[")
			}
		}
		b.WriteString("0")
		for i := n - 1; i >= 0; i-- {
			if i%3 == 0 {
				b.WriteString("}")
			} else {
				b.WriteString("]")
			}
		}
		return b.Bytes()
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want Kind
	}{
		{"arrays 64", nest("[", "]", 64), JSON},
		{"arrays 65", nest("[", "]", 65), JSON},
		{"arrays 9999", nest("[", "]", 9999), JSON},
		{"arrays 10000", nest("[", "]", maxDepth), JSON},
		{"arrays 10001", nest("[", "]", maxDepth+1), Text},
		{"objects malformed", nest(`{"":`, "0}", 100), Text}, // "0}0}" after the innermost key
		{"objects ok 10000", []byte(strings.Repeat(`{"":`, maxDepth-1) + "{}" + strings.Repeat("}", maxDepth-1)), JSON},
		{"objects 10001", []byte(strings.Repeat(`{"":`, maxDepth) + "{}" + strings.Repeat("}", maxDepth)), Text},
		{"mixed 10000", mixed(maxDepth), JSON},
		{"mixed 10001", mixed(maxDepth + 1), Text},
		{"mixed 200 mismatched", append(mixed(200)[:len(mixed(200))-1], ']'), Text},
		{"unclosed 5000", []byte(strings.Repeat("[", 5000)), Text},
	} {
		if ref := refKind(tc.in); ref != tc.want {
			t.Errorf("%s: table says %v but the standard library says %v", tc.name, tc.want, ref)
		}
		checkAllSplits(t, tc.name, tc.in, tc.want, 1)
	}
}

// TestUTF8Boundaries splits every rune-bearing input at every position,
// in two and three pieces.
func TestUTF8Boundaries(t *testing.T) {
	for _, s := range []string{
		"é", "€", "🙂", "a€b🙂c", "\xef\xbf\xbd", "\xf4\x8f\xbf\xbf",
		"\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf0\x80\x80\x80", "\xc1\xbf",
		"\xe2\x82", "\xf0\x9f\x99", "a\xe2", "\xe2\x82x", "\xf0\x9fab", "\x80\x80\x80",
		"🙂\x80", "é\xbf", "\xe2\x82\xac\xac", "\xf5\x80\x80\x80", "\xff\xfe",
		"\"🙂\xe2\x82\"", "[\"\xf0\x9f\x99\x82\"]",
	} {
		b := []byte(s)
		want := refKind(b)
		for i := 0; i <= len(b); i++ {
			for j := i; j <= len(b); j++ {
				c := new(Classifier)
				c.Write(b[:i])
				c.Write(b[i:j])
				c.Write(b[j:])
				if got := c.Kind(); got != want {
					t.Errorf("%q split at %d,%d: Kind = %v, want %v", s, i, j, got, want)
				}
			}
		}
	}
}

// TestStringBytes puts each kind of byte at each position of a string
// long enough to be scanned a word at a time.
func TestStringBytes(t *testing.T) {
	for _, special := range []byte{0x00, 0x01, '\t', '\n', 0x1f, ' ', '"', '\\', '/', 0x7f, 0x80, 0xc3, 0xff} {
		for k := range 24 {
			body := []byte(strings.Repeat("abcdefgh", 3))
			body[k] = special
			for _, wrap := range []string{`""`, `[""]`, `{"k":""}`, `{"":0}`} {
				q := strings.IndexByte(wrap, '"') + 1
				b := []byte(wrap[:q] + string(body) + wrap[q:])
				checkAllSplits(t, strconvQuote(string(b)), b, refKind(b), refLines(b))
			}
		}
	}
}

// TestExhaustiveShort compares every string of up to 4 bytes over an
// alphabet rich in JSON syntax with the standard library, fed bytewise.
func TestExhaustiveShort(t *testing.T) {
	alphabet := []byte("{}[]\",:0-1.eE+ tu\\\r\xc3\xa9")
	maxLen := 4
	if testing.Short() {
		maxLen = 3
	}
	buf := make([]byte, 0, maxLen)
	var rec func()
	rec = func() {
		c := feed(t, buf, oneByte)
		if got, want := c.Kind(), refKind(buf); got != want {
			t.Fatalf("%q: Kind = %v, want %v", buf, got, want)
		}
		if len(buf) == maxLen {
			return
		}
		for _, a := range alphabet {
			buf = append(buf, a)
			rec()
			buf = buf[:len(buf)-1]
		}
	}
	rec()
}

func TestReset(t *testing.T) {
	var c Classifier
	c.Write([]byte("[1,\xff"))
	c.Write([]byte{0xe2})
	if c.Kind() != Binary || c.Bytes() != 5 || c.Lines() != 1 {
		t.Fatalf("before Reset: %v %d %d", c.Kind(), c.Bytes(), c.Lines())
	}
	c.Reset()
	if c.Kind() != Text || c.Bytes() != 0 || c.Lines() != 0 {
		t.Fatalf("after Reset: %v %d %d, want text 0 0", c.Kind(), c.Bytes(), c.Lines())
	}
	c.Write([]byte("{\"a\":\n[]}\n"))
	if c.Kind() != JSON || c.Bytes() != 10 || c.Lines() != 2 {
		t.Fatalf("reused: %v %d %d, want json 10 2", c.Kind(), c.Bytes(), c.Lines())
	}
}

// TestKindMidStream checks that Kind is a pure query: asking between
// writes does not change the final answer.
func TestKindMidStream(t *testing.T) {
	in := []byte("[12, \"é\xe2\x82\xac\", {\"k\": -0.5e+3}]\n")
	var c Classifier
	for i := range in {
		c.Write(in[i : i+1])
		prefix := in[:i+1]
		if got, want := c.Kind(), refKind(prefix); got != want {
			t.Errorf("after %q: Kind = %v, want %v", prefix, got, want)
		}
		if got, want := c.Lines(), refLines(prefix); got != want {
			t.Errorf("after %q: Lines = %d, want %d", prefix, got, want)
		}
	}
}

func TestWriteEmpty(t *testing.T) {
	var c Classifier
	if n, err := c.Write(nil); n != 0 || err != nil {
		t.Fatalf("Write(nil) = %d, %v", n, err)
	}
	c.Write([]byte("1"))
	c.Write([]byte{})
	if c.Kind() != JSON || c.Lines() != 1 || c.Bytes() != 1 {
		t.Fatalf("got %v %d %d, want json 1 1", c.Kind(), c.Lines(), c.Bytes())
	}
}

func TestWriteDoesNotAllocate(t *testing.T) {
	inputs := [][]byte{
		benchText(64 << 10), benchJSON(64 << 10), benchBinary(64 << 10),
		[]byte(`{"a":[true,false,null,"\u00e9",-1.5e3]}`),
	}
	c := new(Classifier)
	for _, in := range inputs {
		allocs := testing.AllocsPerRun(50, func() {
			c.Reset()
			for b := in; len(b) > 0; {
				k := min(len(b), 777)
				c.Write(b[:k])
				b = b[k:]
			}
			_ = c.Kind()
		})
		if allocs != 0 {
			t.Errorf("%.20q...: %v allocations per stream, want 0", in, allocs)
		}
	}
	if allocs := testing.AllocsPerRun(50, func() { Of(inputs[1]) }); allocs != 0 {
		t.Errorf("Of: %v allocations, want 0", allocs)
	}
}

// TestStopsEarly checks that the JSON state machine is switched off as
// soon as the stream is known not to be JSON, or is past the scan limit
// with its first non-whitespace byte known.
func TestStopsEarly(t *testing.T) {
	for _, tc := range []struct {
		in  string
		off bool
	}{
		{"hello", true},
		{"  x", true},
		{"[1,]", true},
		{"\xff", true},
		{"[1,", false},
		{"  ", false},
		{`{"a":1}`, false},
	} {
		var c Classifier
		c.Write([]byte(tc.in))
		if c.jsonOff != tc.off {
			t.Errorf("%q: JSON scanning off = %v, want %v", tc.in, c.jsonOff, tc.off)
		}
	}
	withLimit(t, 4)
	var c Classifier
	c.Write([]byte("    "))
	c.Write([]byte("  "))
	if c.jsonOff {
		t.Errorf("past the limit before the first non-whitespace byte: JSON scanning off")
	}
	c.Write([]byte(" [x"))
	if !c.jsonOff || c.Kind() != Text {
		t.Errorf("past the limit after '[': JSON scanning off = %v, Kind = %v; want true, text", c.jsonOff, c.Kind())
	}
	c.Write([]byte("] \n"))
	if c.Kind() != JSON {
		t.Errorf("past the limit, closed by ']': Kind = %v, want json", c.Kind())
	}
}

// A JSON document whose strings hold bytes that are not valid UTF-8 is
// binary, wherever the bytes are: in the exactly scanned first 64 KiB or
// past them, fed whole or in pieces.
func TestInvalidUTF8JSONIsBinary(t *testing.T) {
	doc := func(at int) []byte {
		var b bytes.Buffer
		b.WriteString(`{"items":[`)
		for i := 0; b.Len() < 100<<10; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if b.Len() >= at && at >= 0 {
				b.WriteString("\"bad \xff\xfe byte\"")
				at = -1
				continue
			}
			b.WriteString(`"item number ` + strings.Repeat("x", i%50) + `"`)
		}
		b.WriteString("]}")
		return b.Bytes()
	}
	for _, at := range []int{10, 30 << 10, 70 << 10, 99 << 10} {
		b := doc(at)
		if len(b) <= JSONScanLimit {
			t.Fatalf("%d bytes", len(b))
		}
		if k, _ := Of(b); k != Binary {
			t.Errorf("invalid UTF-8 at %d: %v", at, k)
		}
		for _, n := range []int{1, 7, 4096, 65537} {
			c := feed(t, b, func(rest int) int { return min(rest, n) })
			if k := c.Kind(); k != Binary {
				t.Errorf("invalid UTF-8 at %d, pieces of %d: %v", at, n, k)
			}
		}
	}
	if k, _ := Of(doc(-1)); k != JSON {
		t.Fatalf("the valid document is %v", k)
	}
}
