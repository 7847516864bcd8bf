package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
)

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

func TestWholeResultBoundWire(t *testing.T) {
	const threshold = 16384
	b := wireBounder(t, threshold)
	blocks := manyBlocks(200, 4000)
	res := &mcp.CallToolResult{}
	for _, s := range blocks {
		res.Content = append(res.Content, &mcp.TextContent{Text: s})
	}
	raw, _ := json.Marshal(res)
	out, err := b.boundWire(context.Background(), hybridctx.Call{Tool: "t", ID: "1"}, raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 4*threshold+200*700 { // a text notice with its calls, and its link
		t.Fatalf("bounded result is %d bytes", len(out))
	}
	var got mcp.CallToolResult
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if n := checkResultBound(t, blocks, got.Content, 4*threshold); n == 0 {
		t.Fatal("nothing was stored")
	}
	// Under the bound, nothing changes.
	small, _ := json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: blocks[0]}, &mcp.TextContent{Text: blocks[1]}}})
	if out, _ := b.boundWire(context.Background(), hybridctx.Call{}, small); string(out) != string(small) {
		t.Fatal("a result under the bound changed")
	}
}

func TestWholeResultBoundTypedLargestFirst(t *testing.T) {
	bind, _ := hybridctx.NewBinding(owner("s1"), openStore(t, "mem://"))
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 1000, ResultThreshold: 2500}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &bounder{off: off}
	// 900 + 950 + 100 + 800 > 2500: storing the 950 one leaves 1800.
	blocks := []string{strings.Repeat("a", 900), strings.Repeat("b", 950), "c", strings.Repeat("d", 800)}
	res := &mcp.CallToolResult{}
	for _, s := range blocks {
		res.Content = append(res.Content, &mcp.TextContent{Text: s})
	}
	out, err := b.boundTyped(context.Background(), hybridctx.Call{Tool: "t"}, res)
	if err != nil {
		t.Fatal(err)
	}
	if n := checkResultBound(t, blocks, out.Content, 2500); n != 1 {
		t.Fatalf("%d blocks stored, want 1", n)
	}
	if tc := out.Content[1].(*mcp.TextContent); !strings.HasPrefix(tc.Text, "artifact://") {
		t.Fatalf("the largest block was not the one stored: %s", dump(out))
	}
	if len(res.Content) != 4 || res.Content[1].(*mcp.TextContent).Text != blocks[1] {
		t.Fatal("the input result was modified")
	}
}
