package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var gatewayRefRE = regexp.MustCompile(`artifact://sha256/[0-9a-f]{64}`)

// TestMCPGatewayRealServers runs the real binary as a gateway in front of
// the npm filesystem and everything servers, the Go SDK test server and
// two broken ones (garbage on stdout and never initializing; a command
// that does not exist) and two Streamable HTTP servers on loopback (URL
// entries; one with a header from ${VAR}, sent to its origin alone): one
// read tool set, namespaced tools, a 2 MB file
// read (offloaded) and written back through write_file by reference,
// byte-identical.
func TestMCPGatewayRealServers(t *testing.T) {
	fsServer := referenceServer(t, "server-filesystem")
	everything := referenceServer(t, "server-everything")
	goServer := mcpServerBin(t)
	web, webSeen := upstreamServer(t, "X-Gw-Token")
	web2, web2Seen := upstreamServer(t, "X-Gw-Token")
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	body := fileBody(2 << 20)
	src := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(src, body, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"fs":         map[string]any{"command": "node", "args": []string{fsServer, dir}, "hybridctx": map[string]any{"dereference": []string{"write_file"}}},
			"everything": map[string]any{"command": "node", "args": []string{everything, "stdio"}},
			"go":         map[string]any{"command": goServer, "env": map[string]string{"GW_TEST": "${GW_TEST_VAR}"}},
			"garbage":    map[string]any{"command": "sh", "args": []string{"-c", "echo not-json; echo '{\"jsonrpc\":'; sleep 60"}},
			"missing":    map[string]any{"command": filepath.Join(dir, "no-such-server")},
			"banner":     map[string]any{"command": "sh", "args": []string{"-c", "echo 'Server v1 starting'; exec \"$0\"", goServer}},
			"web":        map[string]any{"url": web.URL, "headers": map[string]string{"X-Gw-Token": "Bearer ${GW_URL_TOKEN}"}},
			"web2":       map[string]any{"type": "http", "url": web2.URL},
		},
		"hybridctx": map[string]any{"startTimeout": "20s", "threshold": 4096},
	}
	raw, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GW_TEST_VAR", "set")
	t.Setenv("GW_URL_TOKEN", "s3cret-url-token")
	began := time.Now()
	cs, stderr := connectBinary(t, nil, nil, "mcp", "--workspace", newWorkspace(t), "--config", cfgPath)
	defer cs.Close()
	t.Logf("gateway with 6 servers (2 broken) answered initialize after %v", time.Since(began))
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v; stderr %s", err, stderr)
	}
	names := map[string]bool{}
	readTools := 0
	for _, tl := range list.Tools {
		names[tl.Name] = true
		if tl.Name == "read_artifact" || tl.Name == "search_artifact" || tl.Name == "query_artifact" {
			readTools++
		}
		if len(tl.Name) > 48 {
			t.Errorf("tool name over 48: %s", tl.Name)
		}
	}
	listBytes, _ := json.Marshal(list)
	t.Logf("tools/list: %d tools, %d bytes", len(list.Tools), len(listBytes))
	for _, want := range []string{"fs__read_text_file", "fs__write_file", "everything__echo", "go__echo", "go__cat", "banner__echo", "web__cat", "web2__cat"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s; stderr %s", want, stderr)
		}
	}
	if readTools != 3 {
		t.Errorf("read tools listed %d times, want 3", readTools)
	}
	for n := range names {
		if strings.HasPrefix(n, "garbage__") || strings.HasPrefix(n, "missing__") {
			t.Errorf("a broken server's tool is listed: %s", n)
		}
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__read_text_file", Arguments: map[string]any{"path": src}})
	if err != nil || res.IsError {
		t.Fatalf("read: %v %+v", err, res)
	}
	notice := firstText(res)
	ref := gatewayRefRE.FindString(notice)
	if ref == "" || len(notice) > 4*4096+1024 {
		t.Fatalf("the 2 MB result was not offloaded: %d bytes", len(notice))
	}
	t.Logf("the model saw %d bytes for a %d-byte file", len(notice), len(body))
	dst := filepath.Join(dir, "copy.txt")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__write_file", Arguments: map[string]any{"path": dst, "content": ref}})
	if err != nil || res.IsError {
		t.Fatalf("write_file by reference: %v %+v; stderr %s", err, res, stderr)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("written file: %d bytes, err %v; want %d identical bytes", len(got), err, len(body))
	}
	// A tool without dereference gets the reference as it is.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "go__echo", Arguments: map[string]any{"text": ref}})
	if err != nil || firstText(res) != ref {
		t.Fatalf("echo: %v %q", err, firstText(res))
	}
	// Another owner's (or never stored) reference: refused, the file is
	// never written.
	other := filepath.Join(dir, "other.txt")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__write_file", Arguments: map[string]any{"path": other, "content": "artifact://sha256/" + strings.Repeat("0", 64)}})
	if err != nil || !res.IsError || !strings.Contains(firstText(res), "unauthorized") {
		t.Fatalf("foreign reference: %v %+v", err, res)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("the upstream was called: %v", err)
	}
	// The URL servers answer; the header went to its own origin on every
	// request, never to the other, and never to standard error.
	for _, name := range []string{"web__cat", "web2__cat"} {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"size": 100}})
		if err != nil || firstText(res) != catLines(100) {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	if seen := webSeen(); len(seen) == 0 || strings.Count(strings.Join(seen, ","), "Bearer s3cret-url-token") != len(seen) {
		t.Errorf("the URL server saw the header as %q", seen)
	}
	if seen := web2Seen(); len(seen) == 0 || strings.Join(seen, "") != "" {
		t.Errorf("another origin saw the header: %q (%d requests)", seen, len(seen))
	}
	if strings.Contains(stderr.String(), "s3cret") {
		t.Error("the header value reached standard error")
	}
	// The everything server still answers beside them.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || !strings.Contains(firstText(res), "hi") {
		t.Fatalf("everything__echo: %v %+v", err, res)
	}
}

func TestMCPGatewayConfigErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"duplicate":     `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`,
		"unknown field": `{"mcpServers": {"a": {"command": "x", "hybridctx": {"treshold": 3}}}}`,
		"both":          `{"mcpServers": {"a": {"command": "x", "url": "http://127.0.0.1:1/"}}}`,
		"unset var":     `{"mcpServers": {"a": {"command": "x", "env": {"K": "${HYBRIDCTX_GW_TEST_UNSET}"}}}}`,
	}
	for name, body := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runBinary(t, dir, nil, nil, "mcp", "--workspace", newWorkspace(t), "--config", p)
		if r.code != ExitUsage || !strings.Contains(string(r.stderr), `server "a"`) {
			t.Errorf("%s: exit %d, stderr %q", name, r.code, r.stderr)
		}
	}
}

func TestMCPConfigImport(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "claude.json")
	if err := os.WriteFile(p, []byte(`{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"]}, "gh": {"url": "https://h/mcp", "headers": {"A": "${TOKEN}"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(p)
	r := runBinary(t, dir, nil, nil, "mcp", "config", "import", p)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(r.stdout, &out); err != nil || len(out.MCPServers) != 1 {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	hx := out.MCPServers["hx"]
	if hx.Command != "hybridctx" || strings.Join(hx.Args, " ") != "mcp --config "+p {
		t.Errorf("hx = %+v", hx)
	}
	if !strings.Contains(string(r.stderr), "fs, gh") {
		t.Errorf("stderr %q", r.stderr)
	}
	after, _ := os.ReadFile(p)
	if !bytes.Equal(before, after) {
		t.Error("import changed the file")
	}
	if r := runBinary(t, dir, nil, nil, "mcp", "config", "import", filepath.Join(dir, "none.json")); r.code != ExitUsage {
		t.Errorf("missing file: exit %d", r.code)
	}
}

// TestMCPGatewayListenSharesUpstreams serves the gateway over HTTP: two
// client sessions share one process per configured server.
// A tokens file would not guard the gateway's listener (it has one owner):
// it is refused, never ignored.
func TestMCPGatewayRefusesTokensFile(t *testing.T) {
	dir := t.TempDir()
	cfg, tokens := filepath.Join(dir, "mcp.json"), filepath.Join(dir, "tokens")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokens, []byte("alice 0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, dir, nil, nil, "mcp", "--workspace", newWorkspace(t), "--config", cfg, "--listen", "127.0.0.1:0", "--tokens-file", tokens)
	if r.code != ExitUsage || !strings.Contains(string(r.stderr), "--tokens-file does not apply to --config") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestMCPGatewayListenSharesUpstreams(t *testing.T) {
	bin := mcpServerBin(t)
	dir := t.TempDir()
	cfg := map[string]any{"mcpServers": map[string]any{
		"a": map[string]any{"command": bin, "args": []string{"--pidfile", filepath.Join(dir, "a.pid")}},
		"b": map[string]any{"command": bin, "args": []string{"--pidfile", filepath.Join(dir, "b.pid")}},
	}}
	raw, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"mcp", "--listen", "127.0.0.1:0", "--workspace", newWorkspace(t), "--config", cfgPath},
			Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: pw, Getenv: func(string) string { return "" }})
		_ = pw.Close()
	}()
	var url string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if _, u, ok := strings.Cut(sc.Text(), "serving MCP at "); ok {
			url = u
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if url == "" {
		t.Fatal("no URL announced")
	}
	pids := func() string {
		a, _ := os.ReadFile(filepath.Join(dir, "a.pid"))
		b, _ := os.ReadFile(filepath.Join(dir, "b.pid"))
		return string(a) + "/" + string(b)
	}
	before := pids()
	var sessions []*mcp.ClientSession
	for i := 0; i < 2; i++ {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		sessions = append(sessions, cs)
	}
	for _, cs := range sessions {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "b__echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || firstText(res) != "hi" {
			t.Fatalf("b__echo: %v %+v", err, res)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__cat", Arguments: map[string]any{"size": 100000}})
		if err != nil || !gatewayRefRE.MatchString(firstText(res)) {
			t.Fatalf("a__cat not offloaded: %v", err)
		}
	}
	// One process per server, whatever the number of sessions: the
	// processes started before the first session still serve both.
	if after := pids(); before == "/" || after != before {
		t.Errorf("upstream processes %q, then %q", before, after)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway did not stop")
	}
}

// TestMCPGatewayServerCrashRestarts: a real server process that exits
// leaves the other serving, its tools leave tools/list (with
// list_changed), a call to it answers a tool error at once, and after the
// 1 s backoff it is started again and its tools return.
func TestMCPGatewayServerCrashRestarts(t *testing.T) {
	bin := mcpServerBin(t)
	dir := t.TempDir()
	raw, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"a": map[string]any{"command": bin}, "b": map[string]any{"command": bin}}})
	cfgPath := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	cs, _ := connectBinary(t, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}}, nil, "mcp", "--workspace", newWorkspace(t), "--config", cfgPath)
	defer cs.Close()
	ctx := context.Background()
	has := func(name string) bool {
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range list.Tools {
			if tl.Name == name {
				return true
			}
		}
		return false
	}
	if !has("a__echo") || !has("b__echo") {
		t.Fatal("tools missing")
	}
	for len(changed) > 0 {
		<-changed
	}
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__crash", Arguments: map[string]any{}})
	deadline := time.Now().Add(20 * time.Second)
	for has("a__echo") {
		if time.Now().After(deadline) {
			t.Fatal("a's tools stayed listed after it exited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"text": "x"}})
	if err != nil || !res.IsError || !strings.Contains(firstText(res), "not running") {
		t.Fatalf("a while down: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "b__echo", Arguments: map[string]any{"text": "still"}})
	if err != nil || firstText(res) != "still" {
		t.Fatalf("b: %v %+v", err, res)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed")
	}
	for !has("a__echo") {
		if time.Now().After(deadline) {
			t.Fatal("a never came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
