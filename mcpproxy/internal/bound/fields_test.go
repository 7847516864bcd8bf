package bound

import (
	"encoding/json"
	"maps"
	"testing"
)

// TestObjectFields: objectFields gives what json.Unmarshal into a map of
// raw values gives (escaped and non-ASCII keys decoded alike, the last of
// duplicates kept), and an error where it errs or gives no map.
func TestObjectFields(t *testing.T) {
	for _, in := range []string{
		`{"type":"text","text":"a"}`,
		` {"t\u0079pe" : "x", "type":"y"} `,
		"{\"k\xff\":1,\"k\xfe\":2}",
		`{"a":{"b":[1,{"c":"}"}]},"a":null}`,
		`{}`, `null`, `[]`, `"s"`, `{"a":}`, `{"a":1`, ``,
	} {
		var want map[string]json.RawMessage
		werr := json.Unmarshal([]byte(in), &want)
		got, err := objectFields([]byte(in))
		if (werr != nil || want == nil) != (err != nil) {
			t.Errorf("%q: error %v, encoding/json %v (map %v)", in, err, werr, want != nil)
			continue
		}
		if err == nil && !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Errorf("%q: %q, encoding/json %q", in, got, want)
		}
	}
}
