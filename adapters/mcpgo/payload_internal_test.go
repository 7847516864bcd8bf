package mcpgo

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// payloadOf reads each block by the one rule of package mcpblock, as the
// MCP proxy does: the payload, and the link's MIME type.
func TestPayloadOfFollowsTheRule(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte("bytes"))
	prio := 0.5
	ann := &mcp.Annotations{Priority: &prio}
	text := mcp.TextContent{Type: "text", Text: "hello", Annotated: mcp.Annotated{Annotations: ann}}
	for i, c := range []struct {
		in      mcp.Content
		payload string
		mime    string
	}{
		{text, "hello", mimeText},
		{&text, "hello", mimeText},
		{mcp.ImageContent{Type: "image", Data: b64, MIMEType: "image/png"}, "bytes", "image/png"},
		{&mcp.AudioContent{Type: "audio", Data: b64, MIMEType: `bad"mime`}, "bytes", mimeBinary},
		{mcp.ImageContent{Type: "image", Data: "not base64!"}, "not base64!", mimeBinary},
		{mcp.EmbeddedResource{Type: "resource", Resource: mcp.TextResourceContents{URI: "u", Text: "t", MIMEType: "text/csv"}}, "t", "text/csv"},
		{&mcp.EmbeddedResource{Type: "resource", Resource: &mcp.TextResourceContents{URI: "u", Text: "t"}}, "t", mimeText},
		{mcp.EmbeddedResource{Type: "resource", Resource: mcp.BlobResourceContents{URI: "u", Blob: b64}}, "bytes", mimeBinary},
		{mcp.EmbeddedResource{Type: "resource", Resource: &mcp.BlobResourceContents{URI: "u", Blob: b64, MIMEType: "application/zip"}}, "bytes", "application/zip"},
	} {
		p, mime, _, err := payloadOf(c.in)
		if err != nil || fmt.Sprintf("%s", p) != c.payload || mime != c.mime {
			t.Errorf("block %d: %q %s %v", i, p, mime, err)
		}
	}
	if _, _, a, _ := payloadOf(text); a != ann {
		t.Error("annotations not carried over")
	}
	if p, _, _, _ := payloadOf(mcp.ResourceLink{Type: "resource_link", URI: "u"}); p != nil {
		t.Errorf("a link is decided: %v", p)
	}
	// A resource without contents the rule reads is decided whole.
	if p, mime, _, err := payloadOf(mcp.EmbeddedResource{Type: "resource"}); err != nil || mime != mimeJSON {
		t.Errorf("%s %s %v", p, mime, err)
	} else if _, ok := p.(json.RawMessage); !ok {
		t.Errorf("%T", p)
	}
}
