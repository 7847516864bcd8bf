package bound

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

const fuzzThreshold = 600 // above the notice's 500-byte bound

// wireBounder is a bounder over a fresh memory workspace.
func wireBounder(t testing.TB, threshold int64) *Bounder {
	t.Helper()
	mem := memstore.New()
	bind, err := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s1"}, workspace.New(mem, mem))
	if err != nil {
		t.Fatal(err)
	}
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: threshold}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Bounder{Off: off}
}

// binary returns n bytes that are not valid UTF-8.
func binary(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0x80 + i%120)
	}
	return b
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
		out, err := b.Wire(context.Background(), hybridctx.Call{Tool: "t", ID: "1"}, json.RawMessage(c.in))
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
		if err := CheckParts(out, fuzzThreshold); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
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
		out, err := b.Wire(context.Background(), hybridctx.Call{Tool: "t", ID: "1"}, in)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out: %.200s", out)
		}
		if err := CheckParts(out, fuzzThreshold); err != nil {
			t.Fatal(err)
		}
	})
}

// A block the rule does not read, or reads as malformed, is decided whole.
func TestWirePayloadWhole(t *testing.T) {
	for _, raw := range []string{`[]`, `{"type":5,"text":"x"}`, `{"type":"text","text":null}`,
		`{"type":"image","data":"!!"}`, `{"type":"text","text":"x","annotations":"no"}`,
		`{"type":"resource","resource":"x"}`, `{"type":"resource","resource":{"text":7}}`, `{"type":"video","data":"AA=="}`} {
		p, mime, ann, key := wirePayload(json.RawMessage(raw))
		if string(p.(json.RawMessage)) != raw || mime != mimeJSON || ann != nil || key != "" {
			t.Errorf("%s: %v %s %v %q", raw, p, mime, ann, key)
		}
	}
	if _, _, _, key := wirePayload(json.RawMessage(`{"type":"resource","resource":{"blob":"AA=="}}`)); key != "resource" {
		t.Errorf("a resource's payload key is %q", key)
	}
}
