package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
)

// wireBounder is a bounder over a fresh memory workspace.
func wireBounder(t testing.TB, threshold int64) *bound.Bounder {
	t.Helper()
	bind, _ := hybridctx.NewBinding(owner("s1"), openStore(t, "mem://"))
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: threshold}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &bound.Bounder{Off: off}
}

// manyBlocks is a result of n text blocks of size bytes each, every one
// distinct and under the threshold.
func manyBlocks(n, size int) []string {
	out := make([]string, n)
	for i := range out {
		p := fmt.Sprintf("block %04d ", i)
		out[i] = p + strings.Repeat("x", size-len(p))
	}
	return out
}

// checkResultBound checks a bounded result against its input blocks: the
// order holds, every block is kept or replaced by notice and link, and the
// kept ones total at most bound.
func checkResultBound(t *testing.T, blocks []string, out []mcp.Content, bound int64) (stored int) {
	t.Helper()
	var inline int64
	i := 0
	for j := 0; j < len(out); j++ {
		tc, ok := out[j].(*mcp.TextContent)
		if !ok {
			t.Fatalf("block %d: %T", j, out[j])
		}
		if tc.Text == blocks[i] {
			inline += int64(len(tc.Text))
			i++
			continue
		}
		if !strings.HasPrefix(tc.Text, "artifact://sha256/") || j+1 >= len(out) {
			t.Fatalf("block %d is neither the original nor a notice: %.80q", j, tc.Text)
		}
		if _, ok := out[j+1].(*mcp.ResourceLink); !ok {
			t.Fatalf("notice %d without its link", j)
		}
		j++
		i++
		stored++
	}
	if i != len(blocks) {
		t.Fatalf("%d blocks accounted for, want %d", i, len(blocks))
	}
	if inline > bound {
		t.Fatalf("inline blocks total %d > bound %d", inline, bound)
	}
	return stored
}

// boundingProxy is a Proxy with the given inline threshold (the result
// bound its default, 4 × threshold) over a fresh memory workspace.
func boundingProxy(t *testing.T, threshold int64) *Proxy {
	t.Helper()
	bind, _ := hybridctx.NewBinding(owner("s1"), openStore(t, "mem://"))
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: threshold}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reh, err := hybridctx.NewRehydrator(bind, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProxy(off, reh, &Options{Budget: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkStoredWhole checks that a bounded result is the whole-result notice
// and one link, and that query_artifact with .[i] reads block i back.
func checkStoredWhole(t *testing.T, p *Proxy, blocks []string, content []mcp.Content) {
	t.Helper()
	if len(content) != 2 {
		t.Fatalf("%d blocks reach the client, want the notice and one link", len(content))
	}
	notice, ok := content[0].(*mcp.TextContent)
	link, ok2 := content[1].(*mcp.ResourceLink)
	if !ok || !ok2 || !strings.HasPrefix(notice.Text, link.URI+"\n") || link.MIMEType != mimeJSON ||
		!strings.Contains(notice.Text, fmt.Sprintf("%d content blocks (%d text)", len(blocks), len(blocks))) ||
		!strings.Contains(notice.Text, `".[i]"`) {
		t.Fatalf("not the whole-result notice and link: %s", dump(content))
	}
	if len(notice.Text) > hybridctx.MaxNoticeLen {
		t.Fatalf("notice of %d bytes", len(notice.Text))
	}
	for _, i := range []int{0, 1, len(blocks) / 2, len(blocks) - 1} {
		args, _ := json.Marshal(map[string]any{"reference": link.URI, "filter": fmt.Sprintf(".[%d]", i)})
		res, err := p.read.callTool(context.Background(), "query_artifact", args)
		if err != nil || res.IsError {
			t.Fatalf("query .[%d]: %v %s", i, err, dump(res))
		}
		var got struct{ Type, Text string }
		line, _, _ := strings.Cut(res.Content[0].(*mcp.TextContent).Text, "\n")
		if err := json.Unmarshal([]byte(line), &got); err != nil || got.Type != "text" || got.Text != blocks[i] {
			t.Fatalf("block %d read back as %.80q (%v)", i, line, err)
		}
	}
}

func TestWholeResultBoundWire(t *testing.T) {
	skipUnlessLong(t)
	const threshold = 16384
	for _, n := range []int{200, 2000} {
		p := boundingProxy(t, threshold)
		blocks := manyBlocks(n, 4000)
		res := &mcp.CallToolResult{}
		for _, s := range blocks {
			res.Content = append(res.Content, &mcp.TextContent{Text: s})
		}
		raw, _ := json.Marshal(res)
		out, err := p.bound.Wire(context.Background(), hybridctx.Call{Tool: "t", ID: "1"}, raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > 4*threshold+1024 {
			t.Fatalf("%d blocks: bounded result is %d bytes", n, len(out))
		}
		var got mcp.CallToolResult
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		checkStoredWhole(t, p, blocks, got.Content)
		t.Logf("%d blocks of 4,000 bytes: %d bytes reach the client", n, len(out))

		// Typed (Middleware): the same rule.
		typed, err := p.bound.Typed(context.Background(), hybridctx.Call{Tool: "t", ID: "2"}, res)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(typed); len(b) > 4*threshold+1024 {
			t.Fatalf("typed: %d bytes", len(b))
		}
		checkStoredWhole(t, p, blocks, typed.Content)
	}
	// Under the bound, nothing changes.
	b := wireBounder(t, threshold)
	blocks := manyBlocks(2, 4000)
	small, _ := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: blocks[0]}, &mcp.TextContent{Text: blocks[1]}}})
	if out, _ := b.Wire(context.Background(), hybridctx.Call{}, small); string(out) != string(small) {
		t.Fatal("a result under the bound changed")
	}
	// A few blocks whose notices fit stay bounded block by block.
	few := manyBlocks(17, 4000)
	res := &mcp.CallToolResult{}
	for _, s := range few {
		res.Content = append(res.Content, &mcp.TextContent{Text: s})
	}
	raw, _ := json.Marshal(res)
	out, err := b.Wire(context.Background(), hybridctx.Call{Tool: "t", ID: "3"}, raw)
	if err != nil {
		t.Fatal(err)
	}
	var got mcp.CallToolResult
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if n := checkResultBound(t, few, got.Content, 4*threshold); n == 0 {
		t.Fatal("nothing was stored")
	}
}

func TestWholeResultBoundTypedLargestFirst(t *testing.T) {
	bind, _ := hybridctx.NewBinding(owner("s1"), openStore(t, "mem://"))
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 1000, ResultThreshold: 2800}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &bound.Bounder{Off: off}
	// 990 + 995 + 1 + 900 > 2800: storing the 995 one leaves 1891, and its
	// notice and link (about 650 bytes) still fit.
	blocks := []string{strings.Repeat("a", 990), strings.Repeat("b", 995), "c", strings.Repeat("d", 900)}
	res := &mcp.CallToolResult{}
	for _, s := range blocks {
		res.Content = append(res.Content, &mcp.TextContent{Text: s})
	}
	out, err := b.Typed(context.Background(), hybridctx.Call{Tool: "t"}, res)
	if err != nil {
		t.Fatal(err)
	}
	if n := checkResultBound(t, blocks, out.Content, 2800); n != 1 {
		t.Fatalf("%d blocks stored, want 1", n)
	}
	if tc := out.Content[1].(*mcp.TextContent); !strings.HasPrefix(tc.Text, "artifact://") {
		t.Fatalf("the largest block was not the one stored: %s", dump(out))
	}
	if len(res.Content) != 4 || res.Content[1].(*mcp.TextContent).Text != blocks[1] {
		t.Fatal("the input result was modified")
	}
}

// An image stored by one proxy process reads back from another (a client
// that restarts its servers) with the MIME type its link announced.
func TestReadArtifactImageMIMEAcrossProcesses(t *testing.T) {
	store := openStore(t, "mem://")
	first, second := proxyFor(t, store, owner("s1"), nil), proxyFor(t, store, owner("s1"), nil)
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), binary(3*testThreshold)...)
	res, _ := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: png, MIMEType: "image/png"}}})
	out, err := first.bound.Wire(context.Background(), hybridctx.Call{Tool: "shot", ID: "1"}, res)
	if err != nil {
		t.Fatal(err)
	}
	var got mcp.CallToolResult
	if err := json.Unmarshal(out, &got); err != nil || len(got.Content) != 2 {
		t.Fatalf("%v %s", err, out)
	}
	link := got.Content[1].(*mcp.ResourceLink)
	for name, p := range map[string]*Proxy{"same process": first, "another process": second} {
		args, _ := json.Marshal(map[string]any{"reference": link.URI})
		read, err := p.read.callTool(context.Background(), "read_artifact", args)
		if err != nil || read.IsError {
			t.Fatalf("%s: %v %s", name, err, dump(read))
		}
		emb, ok := read.Content[0].(*mcp.EmbeddedResource)
		if !ok || emb.Resource.MIMEType != link.MIMEType || !bytes.Equal(emb.Resource.Blob, png) {
			t.Fatalf("%s: read back as %s, the link said %s", name, dump(read.Content[0])[:200], link.MIMEType)
		}
		rr, err := p.read.readResource(context.Background(), link.URI)
		if err != nil || rr.Contents[0].MIMEType != "image/png" {
			t.Fatalf("%s: resources/read: %v %s", name, err, dump(rr))
		}
	}
	// A later page of an unknown body stays application/octet-stream.
	args, _ := json.Marshal(map[string]any{"reference": link.URI, "offset": 100, "length": 50})
	if read, _ := second.read.callTool(context.Background(), "read_artifact", args); read.Content[0].(*mcp.EmbeddedResource).Resource.MIMEType != mimeBinary {
		t.Fatalf("page: %s", dump(read))
	}
}
