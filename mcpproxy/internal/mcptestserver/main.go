// Command mcptestserver is a small MCP server on stdio for the command
// line's tests of "hybridctx mcp": it announces itself on standard error and
// has four tools, "cat" (size bytes of numbered lines), "echo" (its text
// argument), "blocks" (n text blocks of size bytes, "block <i> xxx…") and
// "crash" (exit status 3 in the middle of a call). See main for its flags.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	// --pidfile PATH writes the process id there, for tests that check the
	// process is gone; --linger keeps running after standard input ends
	// (until a signal), as some servers do.
	linger := false
	for i := 1; i < len(os.Args); i++ {
		switch {
		case os.Args[i] == "--linger":
			linger = true
		case os.Args[i] == "--pidfile" && i+1 < len(os.Args):
			i++
			if err := os.WriteFile(os.Args[i], []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
				fmt.Fprintln(os.Stderr, "mcptestserver:", err)
				os.Exit(1)
			}
		}
	}
	fmt.Fprintln(os.Stderr, "mcptestserver: ready")
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptestserver", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "cat", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Size int }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return text(lines(a.Size)), nil
	})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return text(a.Text), nil
	})
	s.AddTool(&mcp.Tool{Name: "blocks", InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ N, Size int }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		res := &mcp.CallToolResult{}
		for i := range a.N {
			p := fmt.Sprintf("block %06d ", i)
			res.Content = append(res.Content, &mcp.TextContent{Text: p + strings.Repeat("x", max(a.Size-len(p), 0))})
		}
		return res, nil
	})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "mcptestserver: crashing")
		os.Exit(3)
		return nil, nil
	})
	err := s.Run(context.Background(), &mcp.StdioTransport{})
	if linger {
		select {}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcptestserver:", err)
		os.Exit(1)
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// lines returns n bytes of numbered lines.
func lines(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %07d\n", i)
	}
	return b.String()[:n]
}
