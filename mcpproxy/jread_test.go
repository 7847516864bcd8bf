package mcpproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// FuzzJReader: the streaming reader accepts exactly what json.Valid
// accepts, and copies a value byte for byte.
func FuzzJReader(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `[-2e3, 1E+2, 0e0, 1.5e-3]`, `1e`, `-0.`, ` {"a" : [1, -0.5e+3, true, false, null, "x\u00e9\"\\"]} `, `01`, `1.`, `-`, `1e`,
		`{"a":1,}`, `[1,]`, `"\x01"`, `"\ud800"`, `"\uZZZZ"`, `{"a"}`, `tru`, `nul`, "\"\xff\xfe\"", `{"k":{"k":[{}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkJReader(t, in) })
}

// TestJReaderDepth: the nesting limit is json.Valid's.
func TestJReaderDepth(t *testing.T) {
	for _, n := range []int{maxNesting, maxNesting + 1} {
		checkJReader(t, []byte(strings.Repeat("[", n)+strings.Repeat("]", n)))
		checkJReader(t, []byte(strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n)))
	}
}

// checkJReader compares the streaming reader with json.Valid on in.
func checkJReader(t *testing.T, in []byte) {
	t.Helper()
	var out rawBuf
	j := &jreader{br: bufio.NewReaderSize(bytes.NewReader(in), 16)}
	err := j.value(&out, 0)
	if err == nil {
		if _, perr := j.peek(discard{}); perr != io.EOF {
			err = errBadJSON
		}
	}
	if valid := json.Valid(in); valid != (err == nil) {
		t.Fatalf("json.Valid %v, jreader %v", valid, err)
	}
	if err == nil && !bytes.Equal(out, bytes.TrimRight(in, " \t\r\n")) {
		t.Fatalf("copy differs: %q", out)
	}
}
