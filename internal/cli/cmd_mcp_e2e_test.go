//lint:file-ignore SA1019 MCP sampling is deprecated as of protocol 2026-07-28 but still served by the SDK; these tests prove the proxy forwards it.

package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvTestMCPServers names the node_modules directory holding the pinned
// reference MCP servers (.ci/mcp-servers.sh installs them and .ci/run
// exports it). Unset, the tests look in .ci/npm/node_modules.
const EnvTestMCPServers = "HYBRIDCTX_TEST_MCP_SERVERS"

// EnvMCPFigures, set to 1, also measures the filesystem server without the
// proxy and logs the figures (time and bytes per tools/call).
const EnvMCPFigures = "HYBRIDCTX_MCP_FIGURES"

// referenceServer returns the entry point of an npm reference server, or
// skips the test when it is not installed (fails instead when CI=true).
func referenceServer(t *testing.T, pkg string) string {
	t.Helper()
	dir := os.Getenv(EnvTestMCPServers)
	if dir == "" {
		dir = filepath.Join("..", "..", ".ci", "npm", "node_modules")
	}
	entry := filepath.Join(dir, "@modelcontextprotocol", pkg, "dist", "index.js")
	_, statErr := os.Stat(entry)
	_, nodeErr := exec.LookPath("node")
	if statErr != nil || nodeErr != nil {
		msg := "reference MCP server " + pkg + " or node not installed (run .ci/mcp-servers.sh and set " + EnvTestMCPServers + ")"
		skipE2E(t, EnvTestMCPServers, msg)
	}
	abs, err := filepath.Abs(entry)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// countingTransport counts the bytes of every message the client receives.
type countingTransport struct {
	mcp.Transport
	n *atomic.Int64
}

func (c countingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Connection: conn, n: c.n}, nil
}

type countingConn struct {
	mcp.Connection
	n *atomic.Int64
}

func (c *countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		if b, err := jsonrpc.EncodeMessage(m); err == nil {
			c.n.Add(int64(len(b)))
		}
	}
	return m, err
}

// connectBinary runs the real hybridctx binary as an MCP client would.
func connectBinary(t *testing.T, opts *mcp.ClientOptions, received *atomic.Int64, args ...string) (*mcp.ClientSession, *lockedBuffer) {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	cmd := exec.Command(binPath, args...)
	var stderr lockedBuffer // written by the command's copier while the test reads it
	cmd.Stderr = &stderr
	var tr mcp.Transport = &mcp.CommandTransport{Command: cmd}
	if received != nil {
		tr = countingTransport{tr, received}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr %s", err, stderr.String())
	}
	return cs, &stderr
}

// fileBody returns n bytes of UTF-8 text with multi-byte runes, so that
// 64 KiB pages also end in the middle of a rune.
func fileBody(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		b.WriteString("ligne ")
		b.WriteString(strings.Repeat("é—", i%7))
		b.WriteString(" fin\n")
	}
	return b.Bytes()[:n-1]
}

func TestMCPReferenceFilesystemServer(t *testing.T) {
	server := referenceServer(t, "server-filesystem")
	dir := t.TempDir()
	body := fileBody(4 << 20)
	file := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	var received atomic.Int64
	cs, stderr := connectBinary(t, nil, &received, "mcp", "--workspace", ws, "--events", events, "--", "node", server, dir)
	ctx := context.Background()

	before := received.Load()
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": file}})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("read_text_file: %v; stderr %s", err, stderr.String())
	}
	proxied := received.Load() - before
	if res.StructuredContent != nil || res.IsError {
		t.Fatalf("result kept structuredContent or failed: %.300v", res.Content)
	}
	var ref string
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok && l.Size != nil && *l.Size == int64(len(body)) {
			ref = l.URI
		}
	}
	if ref == "" || proxied > 4096 {
		t.Fatalf("no link to the file's text, or %d bytes reached the client", proxied)
	}

	// Read it back in 64 KiB pages: byte for byte the file.
	var got bytes.Buffer
	pages, blobs := 0, 0
	for off := 0; ; off += 65536 {
		page, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_artifact",
			Arguments: map[string]any{"reference": ref, "offset": off, "length": 65536}})
		if err != nil || page.IsError || len(page.Content) != 1 {
			t.Fatalf("page at %d: %v %v", off, err, page)
		}
		pages++
		var b []byte
		switch c := page.Content[0].(type) {
		case *mcp.TextContent:
			b = []byte(c.Text)
		case *mcp.EmbeddedResource:
			b, blobs = c.Resource.Blob, blobs+1
		}
		got.Write(b)
		if len(b) < 65536 {
			break
		}
	}
	if !bytes.Equal(got.Bytes(), body) {
		t.Fatalf("read back %d bytes, not equal to the %d-byte file", got.Len(), len(body))
	}
	// Small results pass unchanged; outputSchema is gone from tools/list.
	dirs, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_allowed_directories", Arguments: map[string]any{}})
	if err != nil || !strings.Contains(dirs.Content[0].(*mcp.TextContent).Text, filepath.Base(dir)) {
		t.Fatalf("list_allowed_directories: %v %v", err, dirs)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.OutputSchema != nil {
			t.Fatalf("%s kept its outputSchema", tl.Name)
		}
	}
	_ = cs.Close()
	if !strings.Contains(stderr.String(), "Secure MCP Filesystem Server running on stdio") {
		t.Fatalf("the server's stderr did not pass: %q", stderr.String())
	}
	if lines := readLines(t, events); len(lines) < pages+2 || !strings.Contains(lines[len(lines)-1], `"run_summary"`) {
		t.Fatalf("events: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	t.Logf("4 MiB file through the proxy: %v, %d bytes reached the client; read back in %d pages (%d as blobs)", elapsed, proxied, pages, blobs)

	if os.Getenv(EnvMCPFigures) == "1" {
		var direct atomic.Int64
		cmd := exec.Command("node", server, dir)
		dcs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).
			Connect(ctx, countingTransport{&mcp.CommandTransport{Command: cmd}, &direct}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer dcs.Close()
		before := direct.Load()
		start := time.Now()
		if _, err := dcs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": file}}); err != nil {
			t.Fatal(err)
		}
		t.Logf("4 MiB file directly: %v, %d bytes reached the client", time.Since(start), direct.Load()-before)
	}
}

func TestMCPReferenceEverythingServer(t *testing.T) {
	server := referenceServer(t, "server-everything")
	progress := make(chan float64, 16)
	var once sync.Once
	sampled := make(chan struct{})
	cs, stderr := connectBinary(t, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Progress
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			once.Do(func() { close(sampled) })
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
	}, nil, "mcp", "--workspace", newWorkspace(t), "--threshold", "1024", "--", "node", server, "stdio")
	defer cs.Close()
	ctx := context.Background()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v; stderr %s", name, err, stderr.String())
		}
		return res
	}

	if echo := call("echo", map[string]any{"message": "hello"}); len(echo.Content) != 1 ||
		!strings.Contains(echo.Content[0].(*mcp.TextContent).Text, "hello") {
		t.Fatalf("echo: %v", echo.Content)
	}
	if sc := call("get-structured-content", map[string]any{"location": "New York"}); sc.StructuredContent == nil {
		t.Fatal("small structuredContent did not pass")
	}

	// The tiny image is over 1024 bytes: stored, and readable as its bytes.
	img := call("get-tiny-image", map[string]any{})
	var link *mcp.ResourceLink
	for _, c := range img.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			link = l
		}
	}
	if link == nil || link.MIMEType != "image/png" || len(img.Content) != 4 {
		t.Fatalf("image result: %d blocks, link %+v", len(img.Content), link)
	}
	back := call("read_artifact", map[string]any{"reference": link.URI})
	emb, ok := back.Content[0].(*mcp.EmbeddedResource)
	if !ok || int64(len(emb.Resource.Blob)) != *link.Size || !bytes.HasPrefix(emb.Resource.Blob, []byte("\x89PNG")) {
		t.Fatalf("image read back: %v", back.Content)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
	if err != nil || !bytes.Equal(rr.Contents[0].Blob, emb.Resource.Blob) || rr.Contents[0].MIMEType != "image/png" {
		t.Fatalf("resources/read of the image: %v", err)
	}

	// Progress notifications of a long-running operation reach the client.
	params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 2}}
	params.SetProgressToken("op-1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	select {
	case <-progress:
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification")
	}

	// Prompts and the server's own resources pass.
	if ps, err := cs.ListPrompts(ctx, nil); err != nil || len(ps.Prompts) == 0 {
		t.Fatalf("prompts: %v", err)
	}
	rs, err := cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) == 0 {
		t.Fatalf("resources: %v", err)
	}
	if r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: rs.Resources[0].URI}); err != nil || len(r.Contents) == 0 {
		t.Fatalf("read %s: %v", rs.Resources[0].URI, err)
	}

	// A request from the server to the client (sampling) crosses the proxy.
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	if !names["read_artifact"] || !names["echo"] || !names["trigger-sampling-request"] {
		t.Fatalf("tools %v", names)
	}
	call("trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5})
	select {
	case <-sampled:
	case <-time.After(10 * time.Second):
		t.Fatal("the sampling request never reached the client")
	}
}
