package mcpproxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
)

const fuzzThreshold = 600 // above the notice's 500-byte bound

func wireBounder(t testing.TB, threshold int64) *bounder {
	t.Helper()
	bind, _ := hybridctx.NewBinding(owner("s1"), openStore(t, "mem://"))
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: threshold}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &bounder{off: off}
}

func TestBoundWire(t *testing.T) {
	b := wireBounder(t, fuzzThreshold)
	long := strings.Repeat("y", 2*fuzzThreshold)
	cases := map[string]struct {
		in        string
		unchanged bool
		want      []string // substrings of the output
		absent    []string
	}{
		"small":          {in: `{"content":[{"type":"text","text":"hi"}],"isError":true,"_meta":{"a":1}}`, unchanged: true},
		"no content":     {in: `{"resultType":"input_required","inputRequests":{"x":{}}}`, unchanged: true},
		"unknown small":  {in: `{"content":[{"type":"hologram","x":1}]}`, unchanged: true},
		"unknown large":  {in: `{"content":[{"type":"hologram","x":"` + long + `"}]}`, want: []string{`"mimeType":"application/json"`}, absent: []string{long}},
		"text kept keys": {in: `{"content":[{"type":"text","text":"` + long + `","annotations":{"audience":["user"]}}],"isError":true,"_meta":{"k":"v"}}`, want: []string{`"isError":true`, `"_meta":{"k":"v"}`, `"audience":["user"]`, `"type":"resource_link"`}, absent: []string{long}},
		"bulky metadata": {in: `{"content":[{"type":"text","text":"hi","_meta":{"pad":"` + long + `"}}]}`, want: []string{`"type":"resource_link"`}, absent: []string{long}},
		"bulky _meta":    {in: `{"content":[],"_meta":{"pad":"` + long + `"}}`, want: []string{`"type":"resource_link"`}, absent: []string{long, `"_meta"`}},
		"not an object":  {in: `"` + long + `"`, want: []string{`"type":"resource_link"`}, absent: []string{long}},
		"bad content":    {in: `{"content":{"text":"` + long + `"}}`, want: []string{`"type":"resource_link"`}, absent: []string{long}},
		"bad base64":     {in: `{"content":[{"type":"image","data":"!!` + long + `","mimeType":"image/png"}]}`, want: []string{`"mimeType":"application/json"`}},
		"hostile mime":   {in: `{"content":[{"type":"image","data":"` + base64.StdEncoding.EncodeToString(binary(700)) + `","mimeType":"` + strings.Repeat("a", 200) + `"}]}`, want: []string{`"mimeType":"application/octet-stream"`}, absent: []string{strings.Repeat("a", 200)}},
	}
	for name, c := range cases {
		out, err := b.boundWire(context.Background(), hybridctx.Call{Tool: "t", ID: "1"}, json.RawMessage(c.in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.unchanged != (string(out) == c.in) {
			t.Errorf("%s: unchanged=%v: %.300s", name, string(out) == c.in, out)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: no %q in %.300s", name, w, out)
			}
		}
		for _, a := range c.absent {
			if strings.Contains(string(out), a) {
				t.Errorf("%s: %.40q still in %.300s", name, a, out)
			}
		}
		checkBounded(t, out, fuzzThreshold)
	}
}

// checkBounded fails unless every part of a tools/call result the bounder
// decides is at most threshold bytes.
func checkBounded(t *testing.T, out []byte, threshold int64) {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(out, &fields); err != nil {
		if int64(len(out)) > threshold {
			t.Fatalf("unbounded non-object result: %.200s", out)
		}
		return
	}
	var blocks []json.RawMessage
	if c, ok := fields["content"]; ok && !isNull(c) {
		if json.Unmarshal(c, &blocks) != nil {
			if int64(len(out)) > threshold {
				t.Fatalf("unbounded result: %.200s", out)
			}
			return
		}
	}
	for _, raw := range blocks {
		payload, _, _, key := wirePayload(raw)
		var n int
		switch p := payload.(type) {
		case string:
			n = len(p)
		case []byte:
			n = len(p)
		case json.RawMessage:
			n = len(p)
		}
		if int64(n) > threshold || key != "" && int64(len(raw)) > threshold && restSize(raw, key) > threshold {
			t.Fatalf("unbounded block: %.200s", raw)
		}
	}
	if sc, ok := fields["structuredContent"]; ok && int64(len(sc)) > threshold {
		t.Fatalf("unbounded structuredContent: %.200s", sc)
	}
	if rest, _ := extras(fields); int64(len(rest)) > threshold {
		t.Fatalf("unbounded extra fields: %.200s", rest)
	}
}

func FuzzBoundWire(f *testing.F) {
	long := strings.Repeat("z", 700)
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"text","text":"` + long + `"},{"type":"image","data":"AAEC","mimeType":"image/png"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"` + long + `"}}],"structuredContent":{"a":"` + long + `"}}`,
		`{"content":[{"type":"resource_link","uri":"x","name":"y"}],"_meta":{"m":"` + long + `"},"isError":true}`,
		`{"content":null,"structuredContent":[1,2,3]}`,
		`[1,2]`, `"` + long + `"`, `{"content":[1,"x",null]}`,
	} {
		f.Add([]byte(s))
	}
	b := wireBounder(f, fuzzThreshold)
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // the JSON-RPC decoder never hands the proxy invalid JSON
		}
		out, err := b.boundWire(context.Background(), hybridctx.Call{Tool: "t", ID: "1"}, in)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out: %.200s", out)
		}
		checkBounded(t, out, fuzzThreshold)
	})
}

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
