package classify

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzShape checks the outline of any bytes: at most the bound asked for
// and MaxShapeLen, valid UTF-8, the same however the bytes are split and
// whether the Shape scans them or the Classifier does (WriteOutline, whose
// kind is Write's; it stops at the first byte that is not UTF-8); for
// valid JSON, every array's length exact (no ≥: nothing was left open); no
// control, line separator or direction override raw.
func FuzzShape(f *testing.F) {
	for _, s := range []string{
		`{"items":[{"id":1,"v":"a"},{"id":2,"v":"b"}],"next":null}`,
		`[[[[[[1,2,3]]]]]]`, `{"a\"b":1,"\u00e9\n":2,"日本":3}`, "{\"\xff\xe2\x82\":[1,",
		`{"` + strings.Repeat("é", 40) + `":{"x":[true,false]}}`, `{"a":{"b":{"c":[]}}}`,
		`[{"k":"v\\"}, "s", 1e5, null]`, `{"a":1,"b" 2}`, "{\"\u2028\u2029\u0085\u202e\u009f\":1}",
	} {
		f.Add([]byte(s), uint8(200), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, max, split uint8) {
		if len(data) > 4096 {
			data = data[:4096]
		}
		got := shapeOf(data, 0, int(max))
		if len(got) > min(int(max), MaxShapeLen) || !utf8.ValidString(got) {
			t.Fatalf("outline over %d bytes or not UTF-8: %q", max, got)
		}
		for _, r := range got {
			if r < 0x20 || hiddenRune(r) {
				t.Fatalf("outline holds U+%04X raw: %q", r, got)
			}
		}
		if again := shapeOf(data, 1+int(split), int(max)); again != got {
			t.Fatalf("in pieces of %d: %q, whole: %q", 1+int(split), again, got)
		}
		if again := outlineOf(data, 1+int(split), int(max)); again != got && utf8.Valid(data) {
			t.Fatalf("from the classifier's scan in pieces of %d: %q, whole: %q", 1+int(split), again, got)
		}
		if json.Valid(data) && strings.Contains(shapeOf(data, 0, MaxShapeLen), "≥") {
			t.Fatalf("valid JSON shown as left open: %q", shapeOf(data, 0, MaxShapeLen))
		}
	})
}
