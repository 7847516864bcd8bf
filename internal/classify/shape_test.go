package classify

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// shapeOf records b written in pieces of k bytes (all at once for k <= 0)
// and returns the outline within max bytes.
func shapeOf(b []byte, k, max int) string {
	var s Shape
	if k <= 0 {
		k = len(b) + 1
	}
	for len(b) > 0 {
		n := min(k, len(b))
		if m, err := s.Write(b[:n]); m != n || err != nil {
			panic(fmt.Sprintf("Write = %d, %v", m, err))
		}
		b = b[n:]
	}
	return string(s.Append(nil, max))
}

// outlineOf is shapeOf with the outline recorded by a Classifier from its
// own scan (WriteOutline); it checks that the Classifier's kind is the one
// a plain Write gives.
func outlineOf(b []byte, k, max int) string {
	var c Classifier
	var s Shape
	kind, _ := Of(b)
	if k <= 0 {
		k = len(b) + 1
	}
	for len(b) > 0 {
		n := min(k, len(b))
		if m, err := c.WriteOutline(b[:n], &s); m != n || err != nil {
			panic(fmt.Sprintf("WriteOutline = %d, %v", m, err))
		}
		b = b[n:]
	}
	if c.Kind() != kind {
		panic(fmt.Sprintf("WriteOutline: kind %v, Write: %v", c.Kind(), kind))
	}
	return string(s.Append(nil, max))
}

// withShapeLimit runs f with the prefix a long stream is read from
// lowered to n bytes.
func withShapeLimit(n int64, f func()) {
	old := scanLimit
	scanLimit = n
	defer func() { scanLimit = old }()
	f()
}

func TestShape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"items":[{"id":1,"v":"a"},{"id":2,"v":"b"}],"next":null}`, `{"items": array[2] of {"id": number, "v": string}, "next": null}`},
		{` "x" `, `string`},
		{`-1.5e3`, `number`},
		{`true`, `bool`},
		{`false`, `bool`},
		{`null`, `null`},
		{`{}`, `{}`},
		{`[]`, `array[0]`},
		{`[{}]`, `array[1] of {}`},
		{`[[], [1]]`, `array[2] of array[0]`},
		{"{\n  \"a\": {\"b\": {\"c\": 1}, \"e\": [true]},\n  \"d\": [[1, 2], [3]]\n}",
			`{"a": {"b": object, "e": array[1] of bool}, "d": array[2] of array[2] of number}`},
		{`[[[[[[1,2,3]]]]]]`, `array[1] of array[1] of array[1] of array[1] of array[1]`},
		{`{"a":[{"b":[{"c":1}]}]}`, `{"a": array[1] of {"b": array[1] of object}}`},
		{`{"s":"a\"b}]","t":"\u00e9\\"}`, `{"s": string, "t": string}`},
		{`{"a\"b":1,"\u00e9\n":2,"日本":3}`, `{"a\"b": number, "\u00e9\n": number, "日本": number}`},
		{"{\"\xff\":1}", `{"\ufffd": number}`},
		{`[1,"a",{"x":1}]`, `array[3] of number`},
		{`{"a":1}  trailing`, `{"a": number}`},
		// Not JSON: what was read, shown as unfinished.
		{`{"a":1,"b" 2}`, `{"a": number, …}`},
		{`[1,2`, `array[≥2] of number`},
		{`{"a":[1,2],"b":{"c":`, `{"a": array[2] of number, "b": {…}, …}`},
		{``, ``},
		{`   `, ``},
		{`hello`, ``},
	} {
		for _, k := range []int{0, 1, 3} {
			if got := shapeOf([]byte(tc.in), k, MaxShapeLen); got != tc.want {
				t.Errorf("%q in pieces of %d:\n got %s\nwant %s", tc.in, k, got, tc.want)
			}
			if got := outlineOf([]byte(tc.in), k, MaxShapeLen); got != tc.want && utf8.ValidString(tc.in) {
				t.Errorf("%q in pieces of %d, from the classifier's scan:\n got %s\nwant %s", tc.in, k, got, tc.want)
			}
		}
	}
}

func TestShapeLongKey(t *testing.T) {
	key := strings.Repeat("é", 40) // 80 bytes: cut at 48, on a rune boundary
	got := shapeOf([]byte(`{"`+key+`":1}`), 0, MaxShapeLen)
	want := `{"` + strings.Repeat("é", 24) + `…": number}`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	// An escape cut by the 48 bytes recorded is dropped whole.
	key = strings.Repeat("a", 45) + `\u00e9`
	got = shapeOf([]byte(`{"`+key+`":1}`), 7, MaxShapeLen)
	if want := `{"` + strings.Repeat("a", 45) + `…": number}`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// checkShape checks the invariants of every outline: within the bound,
// valid UTF-8, the same however the bytes were split.
func checkShape(t *testing.T, b []byte, max int) string {
	t.Helper()
	got := shapeOf(b, 0, max)
	if len(got) > min(max, MaxShapeLen) || !utf8.ValidString(got) {
		t.Fatalf("outline of %d bytes over %d, or not UTF-8: %q", len(got), max, got)
	}
	for _, k := range []int{1, 7, 4096} {
		if again := shapeOf(b, k, max); again != got {
			t.Fatalf("in pieces of %d: %q, whole: %q", k, again, got)
		}
	}
	return got
}

func TestShapeWide(t *testing.T) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range 10000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"key%d":{"x":[%d]}`, i, i)
	}
	b.WriteByte('}')
	got := checkShape(t, b.Bytes(), MaxShapeLen)
	if !strings.HasPrefix(got, `{"key0": {"x": array[1] of number}, "key1": `) || !strings.HasSuffix(got, "…}}") {
		t.Errorf("got %s", got)
	}
	for _, max := range []int{0, 3, 4, 5, 10, 37, 100} {
		got := checkShape(t, b.Bytes(), max)
		if max >= 4 && !strings.Contains(got, "…") {
			t.Errorf("max %d: %q", max, got)
		}
	}
}

func TestShapeDeep(t *testing.T) {
	const depth = 1000
	arr := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	if got := checkShape(t, []byte(arr), MaxShapeLen); got != `array[1] of array[1] of array[1] of array[1] of array[1]` {
		t.Errorf("arrays: %s", got)
	}
	obj := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	if got := checkShape(t, []byte(obj), MaxShapeLen); got != `{"a": {"a": object}}` {
		t.Errorf("objects: %s", got)
	}
	mixed := strings.Repeat(`[{"k":`, depth) + "1" + strings.Repeat("}]", depth)
	if got := checkShape(t, []byte(mixed), MaxShapeLen); got != `array[1] of {"k": array[1] of {"k": array[1]}}` {
		t.Errorf("mixed: %s", got)
	}
}

func TestShapeEmptyContainers(t *testing.T) {
	got := checkShape(t, []byte(`{"a":{},"b":[],"c":[{}],"d":{"e":{}}}`), MaxShapeLen)
	if want := `{"a": {}, "b": array[0], "c": array[1] of {}, "d": {"e": object}}`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestShapePrefix: a body classified from its prefix shows what the
// prefix holds, its open arrays as array[≥N]; bytes past the prefix,
// JSON or not, change nothing.
func TestShapePrefix(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"v":"x"}`, i)
	}
	b.WriteString(`],"next":null}`)
	doc := b.Bytes()
	if got := checkShape(t, doc, MaxShapeLen); got != `{"items": array[1000] of {"id": number, "v": string}, "next": null}` {
		t.Errorf("whole: %s", got)
	}
	withShapeLimit(2000, func() {
		want := `{"items": array[≥111] of {"id": number, "v": string}, …}`
		if got := checkShape(t, doc, MaxShapeLen); got != want {
			t.Errorf("prefix:\n got %s\nwant %s", got, want)
		}
		bad := append(bytes.Clone(doc[:3000]), `}}}]]]"not json`...)
		if got := checkShape(t, bad, MaxShapeLen); got != want {
			t.Errorf("invalid after the prefix:\n got %s\nwant %s", got, want)
		}
	})
}

func TestShapeNodesRunOut(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"a":{`)
	for i := range 100 {
		fmt.Fprintf(&b, `"%d":%d,`, i, i)
	}
	b.WriteString(`"z":0},"b":1}`)
	got := checkShape(t, b.Bytes(), 1<<20) // no byte bound below MaxShapeLen
	if !strings.HasPrefix(got, `{"a": {"0": number, "1": number,`) || !strings.HasSuffix(got, "…}}") {
		t.Errorf("got %s", got)
	}
}

func TestShapeAppendKeepsDst(t *testing.T) {
	var s Shape
	s.Write([]byte(`[1]`))
	if got := string(s.Append([]byte("shape: "), 100)); got != "shape: array[1] of number" {
		t.Errorf("got %q", got)
	}
	if n := testing.AllocsPerRun(100, func() {
		var s Shape
		s.Write([]byte(`{"a":[{"b":1}]}`))
		var buf [MaxShapeLen]byte
		s.Append(buf[:0], MaxShapeLen)
	}); n > 0 {
		t.Errorf("%.1f allocations per outline", n)
	}
}

// BenchmarkShape records the outline of 64 KiB of records, the most a
// body's outline reads.
func BenchmarkShape(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString("[")
	for i := 0; doc.Len() < JSONScanLimit; i++ {
		fmt.Fprintf(&doc, `{"id":%d,"name":"naïve","score":%d.5,"ok":true,"tags":["a","b\u00e9",null],"path":"/srv/data/%d.json"},`, i, i, i)
	}
	p := doc.Bytes()[:JSONScanLimit]
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		var s Shape
		s.Write(p)
	}
}

// Line breaks, C1 controls and direction overrides in a key reach the
// outline as \uXXXX escapes, never raw, like the other controls.
func TestShapeEscapesHiddenRunes(t *testing.T) {
	for _, r := range []rune{0x80, 0x85, 0x9f, 0x2028, 0x2029, 0x202a, 0x202e, 0x200e, 0x200f, 0x061c, 0x2066, 0x2069} {
		key := "a" + string(r) + "b"
		got := checkShape(t, []byte(`{"`+key+`":1}`), MaxShapeLen)
		want := fmt.Sprintf(`{"a\u%04x%s": number}`, r, "b")
		if got != want || strings.ContainsRune(got, r) {
			t.Errorf("U+%04X: got %q, want %q", r, got, want)
		}
	}
	// Runes around them stay as they are; an escape in the key stays one.
	got := checkShape(t, []byte(`{"é\u2028x`+"\u00a0\u2027\u202f"+`":1}`), MaxShapeLen)
	if want := `{"é\u2028x` + "\u00a0\u2027\u202f" + `": number}`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// A long key of them is cut within the bound.
	checkShape(t, []byte(`{"`+strings.Repeat("\u2028", 60)+`":{"`+strings.Repeat("\u0085", 60)+`":1}}`), MaxShapeLen)
}
