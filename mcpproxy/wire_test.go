package mcpproxy

import (
	"encoding/json"
	"testing"
)

func FuzzRewrites(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"a","inputSchema":{"type":"object"},"outputSchema":{}}]}`,
		`{"tools":[{"name":"read_artifact"}],"nextCursor":"c"}`,
		`{"resourceTemplates":[{"uriTemplate":"artifact://sha256/{hex}","name":"x"}]}`,
		`{"capabilities":{"tools":{"listChanged":true}},"protocolVersion":"2025-11-25"}`,
		`{"capabilities":null}`, `[]`, `{"tools":"x"}`,
	} {
		f.Add([]byte(s))
	}
	tool := json.RawMessage(`{"name":"read_artifact","inputSchema":{"type":"object"}}`)
	tmpl := json.RawMessage(`{"name":"artifact","uriTemplate":"artifact://sha256/{hex}"}`)
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		for _, out := range []json.RawMessage{withCapabilities(in), withReadTools(in, []json.RawMessage{tool}, func(n string) bool { return n == "read_artifact" }), withTemplate(in, tmpl)} {
			if !json.Valid(out) {
				t.Fatalf("invalid JSON from %s: %s", in, out)
			}
		}
		// Keys as a client reads them: exactly, not as encoding/json matches
		// struct fields ("toolS" is not "tools").
		var top map[string]json.RawMessage
		var tools []map[string]json.RawMessage
		if json.Unmarshal(withReadTools(in, []json.RawMessage{tool}, func(n string) bool { return n == "read_artifact" }), &top) == nil &&
			json.Unmarshal(top["tools"], &tools) == nil && tools != nil {
			n := 0
			for _, tl := range tools {
				var name string
				if json.Unmarshal(tl["name"], &name) == nil && name == "read_artifact" {
					n++
				}
				if _, ok := tl["outputSchema"]; ok {
					t.Fatalf("outputSchema kept: %s", in)
				}
			}
			if n > 1 {
				t.Fatalf("read tool listed %d times: %s", n, in)
			}
		}
	})
}
