package mcpproxy

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The typed and the wire bounder read a block's payload by the one rule
// of package mcpblock: the same payload, MIME type and annotations.
func TestTypedAndWirePayloadsAgree(t *testing.T) {
	b := &bounder{off: mustOffloader(t, 1<<20)}
	ann := &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5}
	blocks := []mcp.Content{
		&mcp.TextContent{Text: "hello"},
		&mcp.TextContent{Text: "hello", Annotations: ann},
		&mcp.ImageContent{Data: []byte{0, 1, 2, 255}, MIMEType: "image/png"},
		&mcp.AudioContent{Data: []byte("sound"), MIMEType: "bad\nmime", Annotations: ann},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Blob: []byte("blob"), MIMEType: "application/zip"}},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: "text", MIMEType: "text/csv"}, Annotations: ann},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: "text"}},
		&mcp.ResourceLink{URI: "file:///a", Name: "a"},
	}
	for i, c := range blocks {
		tp, tmime, tann, err := b.typedPayload(c)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		wp, wmime, wann, _ := wirePayload(raw)
		if fmt.Sprintf("%s", tp) != fmt.Sprintf("%s", wp) || tmime != wmime {
			t.Errorf("block %d: typed %q %s, wire %q %s", i, tp, tmime, wp, wmime)
		}
		tj, _ := json.Marshal(tann)
		wj, _ := json.Marshal(wann)
		if string(tj) != string(wj) {
			t.Errorf("block %d: annotations typed %s, wire %s", i, tj, wj)
		}
	}
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
