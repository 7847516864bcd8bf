package jsonstream

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestScanID: the top-level id of an object, a string or a number, found
// whatever follows it, fed whole or a byte at a time.
func TestScanID(t *testing.T) {
	long := `"` + strings.Repeat("x", MaxIDBytes+8) + `"`
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"result":{}}`:            `7`,
		`{"result":{"id":1,"x":"\"id\":2"},"id":"a\"b"}`:  `"a\"b"`,
		`{"id" : -1.5e3 , "method":"x"`:                   `-1.5e3`,
		`{"params":[{"id":1}],"id":"q"} trailing garbage`: `"q"`,
		`{"id":null}`:             ``,
		`{"id":{"a":1}}`:          ``,
		`{"id":[1]}`:              ``,
		`{"idx":1,"i":2}`:         ``,
		`[{"id":1}]`:              ``,
		`{"id":"\x01"}`:           ``,
		`{"id":01}`:               ``,
		`{"id":` + long + `}`:     ``,
		`{"a":"\\","id":"z"}`:     `"z"`,
		`{"id":"open`:             ``,
		`{"i\u0064":3}`:           ``,
		`  {"id":"x","id":"y"}  `: `"y"`,
	} {
		if got := ScanID([]byte(in)); string(got) != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
		var s IDScanner
		for i := range len(in) {
			s.Feed([]byte{in[i]})
		}
		if string(s.ID()) != want {
			t.Errorf("%q a byte at a time: %s, want %s", in, s.ID(), want)
		}
	}
}

// FuzzScanID: on a valid object, the id the scanner finds is the one
// encoding/json reads (when it is a string or a number); it may miss only
// an id longer than it keeps. Keys are compared as written, so an object
// with a \u escape (a key may spell "id" with one) is not compared.
func FuzzScanID(f *testing.F) {
	for _, s := range []string{`{"id":1}`, `{"a":[1,{"id":2}],"id":"x"}`, `{"id":"\\\""}`, `{"id":1,"id":2}`, `{"id":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got := ScanID(in)
		var m map[string]json.RawMessage
		if json.Unmarshal(in, &m) != nil || bytes.Contains(in, []byte(`\u`)) {
			return // only no panic
		}
		want := m["id"]
		if !validID(want) {
			want = nil
		}
		if string(got) != string(want) && (got != nil || len(in) <= MaxIDBytes) {
			t.Fatalf("%q: %s, want %s", in, got, want)
		}
	})
}
