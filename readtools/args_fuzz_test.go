package readtools_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/hybridctx/hybridctx/readtools"
)

// FuzzParseReadArgs checks that any input either parses into arguments
// within their ranges, which encode and parse back to themselves, or fails
// with ErrInvalidArguments, never anything else.
func FuzzParseReadArgs(f *testing.F) {
	for _, s := range []string{
		`{"reference":"artifact://sha256/ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}`,
		`{"reference":"x","offset":0,"length":10,"max_bytes":5}`,
		`{"reference":"x","start_line":3,"line_count":10}`, `{"reference":"x","start_line":3,"offset":1}`,
		`{"reference":"x","offset":null}`, `{"reference":"x","offset":-1}`, `{"reference":"x","offset":"1"}`,
		`{"reference":"x"} `, `{"reference":"x"}{}`, `[]`, `null`, ``, `{"a":1}`, `{"reference":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := readtools.ParseReadArgs(json.RawMessage(raw))
		if err != nil {
			if !errors.Is(err, readtools.ErrInvalidArguments) {
				t.Fatalf("error %v does not wrap ErrInvalidArguments", err)
			}
			return
		}
		if a.Reference == "" || a.Offset < 0 || a.Length < 0 || a.MaxBytes < 0 || a.StartLine < 0 || a.LineCount < 0 {
			t.Fatalf("out of range: %+v", a)
		}
		if a.Lines() && (a.Offset != 0 || a.Length != 0) {
			t.Fatalf("bytes and lines together: %+v", a)
		}
		enc := a.Encode()
		if len(enc) > readtools.MaxArgsBytes {
			return // escapes made it longer than the input (e.g. U+2028)
		}
		back, err := readtools.ParseReadArgs(enc)
		if err != nil || back != a {
			t.Fatalf("round trip %+v → %+v, %v", a, back, err)
		}
	})
}
