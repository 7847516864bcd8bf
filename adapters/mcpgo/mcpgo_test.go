package mcpgo_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/adapters/internal/adapttest"
	"github.com/hybridctx/hybridctx/adapters/mcpgo"
	"github.com/hybridctx/hybridctx/readtools"
)

// newServer returns an mcp-go server whose tools are bounded by off and
// whose read tools are served by reh, with a connected in-process client.
func newServer(t *testing.T, off *hybridctx.Offloader, reh *hybridctx.Rehydrator, body string) *client.Client {
	t.Helper()
	s := server.NewMCPServer("test", "1.0", server.WithToolHandlerMiddleware(mcpgo.Middleware(off, nil)))
	s.AddTool(mcp.NewTool(adapttest.BigTool, mcp.WithString("path")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(body), nil
	})
	s.AddTool(mcp.NewTool(adapttest.FailingTool), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New(adapttest.Secret)
	})
	s.AddTool(mcp.NewTool("mixed"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		big := strings.Repeat("{\"k\":1}", 2000)
		return &mcp.CallToolResult{
			Content: []mcp.Content{
				mcp.NewTextContent("small"),
				mcp.NewImageContent(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff, 0x00}, 5000)), "image/png"),
				mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///x", MIMEType: "text/csv", Text: strings.Repeat("a,b\n", 3000)}),
			},
			StructuredContent: json.RawMessage("[" + strings.TrimSuffix(strings.Repeat(big[:7]+",", 1500), ",") + "]"),
		}, nil
	})
	s.AddTool(mcp.NewTool("many"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := &mcp.CallToolResult{}
		for i := range 200 {
			p := fmt.Sprintf("block %04d ", i)
			res.Content = append(res.Content, mcp.NewTextContent(p+strings.Repeat("x", 4000-len(p))))
		}
		return res, nil
	})
	s.AddTool(mcp.NewTool("many-structured"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := &mcp.CallToolResult{StructuredContent: manyStructured()}
		for i := range 200 {
			p := fmt.Sprintf("block %04d ", i)
			res.Content = append(res.Content, mcp.NewTextContent(p+strings.Repeat("x", 4000-len(p))))
		}
		return res, nil
	})
	if err := mcpgo.AddReadTools(s, reh, nil); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return c
}

func call(t *testing.T, c *client.Client, name string, args json.RawMessage) *mcp.CallToolResult {
	t.Helper()
	var a map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: a}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("empty result")
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("first block is %T", res.Content[0])
	}
	return tc.Text
}

// A 1 MiB result reaches the client as the notice and a resource_link; the
// scripted model pages it back byte for byte with read_artifact.
func TestEndToEnd(t *testing.T) {
	env := adapttest.New(t, nil)
	body := adapttest.Body()
	c := newServer(t, env.Off, env.Reh, body)
	s := &adapttest.Script{ReadTool: hybridctx.DefaultReadToolName, SearchTool: hybridctx.DefaultSearchToolName, Page: 65536}
	var sent int
	result := ""
	for {
		step, done, err := s.Next(result)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		res := call(t, c, step.Name, step.Args)
		if res.IsError {
			t.Fatalf("%s: isError: %v", step.Name, res.Content)
		}
		if step.Name == adapttest.BigTool {
			raw, _ := json.Marshal(res)
			sent = len(raw)
			if len(res.Content) != 2 {
				t.Fatalf("stored result has %d blocks, want notice + resource_link", len(res.Content))
			}
			link, ok := res.Content[1].(mcp.ResourceLink)
			if !ok || link.Size == nil || *link.Size != int64(len(body)) || link.MIMEType != "text/plain" {
				t.Fatalf("second block %#v, want a resource_link of %d bytes", res.Content[1], len(body))
			}
			defer func() {
				if link.URI != s.Ref() {
					t.Errorf("link %s, notice %s", link.URI, s.Ref())
				}
			}()
		}
		result = text(t, res)
	}
	if err := s.Check(body); err != nil {
		t.Fatal(err)
	}
	if sent > 1024 {
		t.Fatalf("the client received %d bytes for the 1 MiB result", sent)
	}
	t.Logf("1 MiB result: %d bytes reach the client (notice %d bytes), %d pages", sent, len(s.Notice), len(s.Pages))
}

// Another owner's reference is refused exactly like one never stored.
func TestOtherOwnerRefused(t *testing.T) {
	env := adapttest.New(t, nil)
	notice, err := env.Offload(context.Background(), adapttest.Body())
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := adapttest.RefOf(notice)
	c := newServer(t, env.OffB, env.RehB, "")
	args := func(r string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"reference": r, "length": 10})
		return b
	}
	foreign := call(t, c, hybridctx.DefaultReadToolName, args(ref))
	never := call(t, c, hybridctx.DefaultReadToolName, args(adapttest.NeverStored))
	if !foreign.IsError || !never.IsError || text(t, foreign) != text(t, never) {
		t.Fatalf("foreign %v %q, never stored %v %q", foreign.IsError, text(t, foreign), never.IsError, text(t, never))
	}
	_, errForeign := c.ReadResource(context.Background(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: ref}})
	_, errNever := c.ReadResource(context.Background(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: adapttest.NeverStored}})
	if errForeign == nil || errNever == nil || errForeign.Error() != errNever.Error() {
		t.Fatalf("resources/read: foreign %v, never stored %v", errForeign, errNever)
	}
}

// A handler's error reaches the client as the categorical notice only.
func TestToolErrorHidden(t *testing.T) {
	env := adapttest.New(t, nil)
	c := newServer(t, env.Off, env.Reh, "")
	res := call(t, c, adapttest.FailingTool, nil)
	raw, _ := json.Marshal(res)
	if !res.IsError || text(t, res) != adaptkit.ToolFailedNotice || strings.Contains(string(raw), "10.9.8.7") {
		t.Fatalf("failing tool gave %s", raw)
	}
}

// Every block kind and the structured content are decided one by one.
func TestBlocksAndStructuredContent(t *testing.T) {
	env := adapttest.New(t, nil)
	c := newServer(t, env.Off, env.Reh, "")
	res := call(t, c, "mixed", nil)
	if res.StructuredContent != nil || len(res.RawStructuredContent) > 0 {
		t.Fatalf("stored structured content was kept: %.100s", res.RawStructuredContent)
	}
	var links []mcp.ResourceLink
	for _, b := range res.Content {
		if l, ok := b.(mcp.ResourceLink); ok {
			links = append(links, l)
		}
	}
	if len(res.Content) != 7 || text(t, res) != "small" || len(links) != 3 {
		raw, _ := json.Marshal(res)
		t.Fatalf("got %d blocks, %d links: %.600s", len(res.Content), len(links), raw)
	}
	wantMIME := []string{"image/png", "text/csv", "application/json"}
	for i, l := range links {
		if l.MIMEType != wantMIME[i] {
			t.Errorf("link %d MIME %q, want %q", i, l.MIMEType, wantMIME[i])
		}
	}
	if *links[0].Size != 10000 {
		t.Errorf("image stored as %d bytes, want the 10000 decoded bytes", *links[0].Size)
	}
	// The image comes back through resources/read as the same bytes.
	rr, err := c.ReadResource(context.Background(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: links[0].URI}})
	if err != nil {
		t.Fatal(err)
	}
	blob, ok := rr.Contents[0].(mcp.BlobResourceContents)
	if !ok || blob.Blob != base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff, 0x00}, 5000)) {
		t.Fatalf("resources/read gave %T", rr.Contents[0])
	}
}

func TestBadInput(t *testing.T) {
	env := adapttest.New(t, nil)
	if err := mcpgo.AddReadTools(nil, env.Reh, nil); !errors.Is(err, mcpgo.ErrNilServer) {
		t.Fatalf("nil server: %v", err)
	}
	s := server.NewMCPServer("t", "1")
	if err := mcpgo.AddReadTools(s, nil, nil); !errors.Is(err, mcpgo.ErrNilRehydrator) {
		t.Fatalf("nil rehydrator: %v", err)
	}
	if err := mcpgo.AddReadTools(s, env.Reh, &mcpgo.Options{Names: readtools.Names{Read: "bad name!"}}); !errors.Is(err, hybridctx.ErrInvalidPolicy) {
		t.Fatalf("bad name: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Middleware(nil) did not panic")
		}
	}()
	mcpgo.Middleware(nil, nil)
}

// A cancelled context is an error, never a decision.
func TestCancelled(t *testing.T) {
	env := adapttest.New(t, nil)
	var decisions int
	h := mcpgo.Middleware(env.Off, &mcpgo.Options{OnDecision: func(context.Context, string, *hybridctx.OffloadResult) { decisions++ }})(
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(adapttest.Body()), nil
		})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h(ctx, mcp.CallToolRequest{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	failing := mcpgo.Middleware(env.Off, nil)(func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, ctx.Err()
	})
	if _, err := failing(ctx, mcp.CallToolRequest{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled tool: %v", err)
	}
	if _, err := h(context.Background(), mcp.CallToolRequest{}); err != nil || decisions != 1 {
		t.Fatalf("decisions %d, err %v", decisions, err)
	}
}

// 200 blocks of 4,000 bytes: under the threshold each, their notices alone
// over the result bound; the result is stored whole and block i reads back
// with query_artifact and .[i].
func TestWholeResultBound(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: 16384})
	c := newServer(t, env.Off, env.Reh, "")
	res := call(t, c, "many", nil)
	raw, _ := json.Marshal(res)
	if len(raw) > 4*16384+1024 || len(res.Content) != 2 || !strings.Contains(text(t, res), "200 content blocks (200 text)") {
		t.Fatalf("%d bytes: %.300s", len(raw), raw)
	}
	link, ok := res.Content[1].(mcp.ResourceLink)
	if !ok {
		t.Fatalf("second block is %T", res.Content[1])
	}
	args, _ := json.Marshal(map[string]any{"reference": link.URI, "filter": ".[123].text"})
	got := text(t, call(t, c, "query_artifact", args))
	want := "block 0123 " + strings.Repeat("x", 4000-11)
	if line, _, _ := strings.Cut(got, "\n"); line != `"`+want+`"` {
		t.Fatalf("block 123 read back as %.60q", got)
	}
}

// manyStructured returns the structured content of the "many-structured"
// tool: about 40 KB of JSON.
func manyStructured() map[string]any {
	rows := make([]string, 1000)
	for i := range rows {
		rows[i] = fmt.Sprintf("row %04d ", i) + strings.Repeat("y", 30)
	}
	return map[string]any{"rows": rows}
}

// When the whole result is stored, the stored structured content's notice
// and link still reach the client after the whole-result ones.
func TestWholeResultBoundKeepsStructuredContent(t *testing.T) {
	env := adapttest.New(t, &hybridctx.Policy{InlineThreshold: 16384})
	c := newServer(t, env.Off, env.Reh, "")
	res := call(t, c, "many-structured", nil)
	raw, _ := json.Marshal(res)
	if len(raw) > 4*16384+1024 || !strings.Contains(text(t, res), "200 content blocks (200 text)") {
		t.Fatalf("%d bytes: %.300s", len(raw), raw)
	}
	if res.StructuredContent != nil || len(res.RawStructuredContent) > 0 {
		t.Fatalf("stored structured content was kept: %.100s", res.RawStructuredContent)
	}
	var links []mcp.ResourceLink
	for _, b := range res.Content {
		if l, ok := b.(mcp.ResourceLink); ok {
			links = append(links, l)
		}
	}
	if len(res.Content) != 4 || len(links) != 2 || links[1].MIMEType != "application/json" {
		t.Fatalf("got %d blocks, %d links, want the whole result's and the structured content's notice and link: %.600s", len(res.Content), len(links), raw)
	}
	want, _ := json.Marshal(manyStructured())
	if *links[1].Size != int64(len(want)) {
		t.Errorf("structured content stored as %d bytes, want %d", *links[1].Size, len(want))
	}
	args, _ := json.Marshal(map[string]any{"reference": links[1].URI, "filter": ".rows[456]"})
	got := text(t, call(t, c, "query_artifact", args))
	if line, _, _ := strings.Cut(got, "\n"); line != `"row 0456 `+strings.Repeat("y", 30)+`"` {
		t.Fatalf("row 456 read back as %.60q", got)
	}
}
