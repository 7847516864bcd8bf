package hybridctx

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// replaceValues returns v with every string value (not key) replaced as
// maskStrings' test function replaces it.
func replaceValues(v any) any {
	switch x := v.(type) {
	case string:
		return "R" + strconv.Itoa(len(x))
	case []any:
		for i := range x {
			x[i] = replaceValues(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = replaceValues(x[k])
		}
	}
	return v
}

func decodeNumbers(s string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// FuzzMaskStrings checks the splice maskStrings makes on any arguments:
// replacing nothing returns them byte for byte; replacing every string
// value gives valid JSON equal to the original with those values replaced,
// keys, numbers and nesting unchanged; input that is not one JSON value is
// refused, never half-rewritten.
func FuzzMaskStrings(f *testing.F) {
	f.Add(`{"path": "a.go", "content": "x\ny", "n": 1.50e2, "a": [true, null, "s", {"k": "v"}]}`)
	f.Add(`"bare"`)
	f.Add(`[{"":""},{"\u0022k":"\ud83d\ude00"}]`)
	f.Add(`{"a": "b"} {"c": "d"}`)
	f.Add(` { "a" : "b" , "c" : [ ] } `)
	f.Fuzz(func(t *testing.T, input string) {
		same, err := maskStrings(input, func(string) (string, bool, error) { return "", false, nil })
		if err == nil && same != input {
			t.Fatalf("nothing replaced, yet %q became %q", input, same)
		}
		out, err := maskStrings(input, func(s string) (string, bool, error) { return "R" + strconv.Itoa(len(s)), true, nil })
		if err != nil {
			if json.Valid([]byte(input)) {
				t.Fatalf("valid arguments refused: %v", err)
			}
			return
		}
		if !json.Valid([]byte(input)) {
			t.Fatalf("invalid arguments %q rewritten as %q", input, out)
		}
		want, err1 := decodeNumbers(input)
		got, err2 := decodeNumbers(out)
		if err1 != nil || err2 != nil {
			t.Fatalf("decode: %v, %v (%q)", err1, err2, out)
		}
		if !reflect.DeepEqual(replaceValues(want), got) {
			t.Fatalf("%q became %q", input, out)
		}
	})
}
