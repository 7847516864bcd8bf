package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPHTTPUsageErrors(t *testing.T) {
	env := map[string]string{EnvUser: "ada", "EMPTY": "", "TOKEN": "tok-secret-1", "SHORT": "tok-secret-15byt"[:15]}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"mcp"}, "name the MCP server"},
		{[]string{"mcp", "--url", "http://127.0.0.1:1/mcp", "--", "x"}, "not both"},
		{[]string{"mcp", "--header", "A: b", "--", "x"}, "--header needs --url"},
		{[]string{"mcp", "--url", "ftp://h/mcp"}, "absolute http or https URL"},
		{[]string{"mcp", "--url", "http://h/mcp", "--header", "no colon"}, `"Name: value"`},
		{[]string{"mcp", "--url", "http://h/mcp", "--header", "Bad Name: v"}, `"Name: value"`},
		{[]string{"mcp", "--url", "http://h/mcp", "--header", "X-Key: ${UNSET_VAR}"}, "UNSET_VAR"},
		{[]string{"mcp", "--url", "http://h/mcp", "--header", "X-Key: ${EMPTY}"}, "EMPTY"},
		{[]string{"mcp", "--url", "http://h/mcp", "--header", "X-Key: ${oops"}, "unclosed"},
		{[]string{"mcp", "--url", "http://h/mcp", "--header", "X-Key: ${1A}"}, "variable name"},
		{[]string{"mcp", "--listen", "0.0.0.0:0", "--", "x"}, "--token-env"},
		{[]string{"mcp", "--listen", ":0", "--", "x"}, "--token-env"},
		{[]string{"mcp", "--listen", "nonsense", "--", "x"}, "HOST:PORT"},
		{[]string{"mcp", "--listen", "127.0.0.1:0", "--token-env", "EMPTY", "--", "x"}, "unset or empty"},
		{[]string{"mcp", "--token-env", "TOKEN", "--", "x"}, "--token-env needs --listen"},
		{[]string{"mcp", "--listen", "127.0.0.1:0", "--token-env", "TOKEN", "--", "x"}, "at least 16 bytes"},
		{[]string{"mcp", "--listen", "127.0.0.1:0", "--token-env", "SHORT", "--", "x"}, "at least 16 bytes"},
		{[]string{"mcp", "--allow-origin", "http://localhost:5173", "--", "x"}, "--allow-origin needs --listen"},
		{[]string{"mcp", "--listen", "127.0.0.1:0", "--allow-origin", "localhost:5173", "--", "x"}, "scheme://host[:port]"},
		{[]string{"mcp", "--listen", "127.0.0.1:0", "--allow-origin", "http://localhost:5173/app", "--", "x"}, "scheme://host[:port]"},
		{[]string{"mcp", "--max-sessions", "0", "--", "x"}, "--max-sessions"},
		{[]string{"mcp", "--idle-timeout", "0s", "--", "x"}, "--idle-timeout"},
		{[]string{"mcp", "--result-threshold", "-1", "--", "x"}, "--result-threshold"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		code := Main(context.Background(), c.args, Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr,
			Getenv: func(k string) string { return env[k] }})
		if code != ExitUsage || !strings.Contains(stderr.String(), c.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, code, stderr.String(), c.want)
		}
		if strings.Contains(stderr.String(), "tok-secret") {
			t.Errorf("%v: the token leaked: %q", c.args, stderr.String())
		}
	}
}

func TestExpandVars(t *testing.T) {
	get := func(k string) string { return map[string]string{"A": "1", "B_2": "two"}[k] }
	for in, want := range map[string]string{"": "", "plain": "plain", "$A": "$A", "x${A}y${B_2}": "x1ytwo", "${A}${A}": "11", "$${A}": "$1"} {
		if got, err := expandVars(in, get); err != nil || got != want {
			t.Errorf("expandVars(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// listening is one in-process "hybridctx mcp --listen".
type listening struct {
	url    string
	stderr *lockedBuffer
	cancel context.CancelFunc
	code   chan int
}

// startListen runs Main with --listen 127.0.0.1:0 and waits for its URL.
func startListen(t *testing.T, env map[string]string, args ...string) *listening {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &listening{stderr: &lockedBuffer{}, cancel: cancel, code: make(chan int, 1)}
	pr, pw := io.Pipe()
	go func() {
		l.code <- Main(ctx, append([]string{"mcp", "--listen", "127.0.0.1:0"}, args...), Env{Stdin: strings.NewReader(""),
			Stdout: io.Discard, Stderr: io.MultiWriter(l.stderr, pw), Getenv: func(k string) string { return env[k] }})
		_ = pw.Close()
	}()
	// Servers behind a gateway may write lines of their own first.
	br := bufio.NewReader(pr)
	var line, u string
	var err error
	ok := false
	for !ok && err == nil {
		line, err = br.ReadString('\n')
		_, u, ok = strings.Cut(strings.TrimSpace(line), "serving MCP at ")
	}
	go func() { _, _ = io.Copy(io.Discard, br) }()
	if err != nil || !ok {
		cancel()
		t.Fatalf("no URL announced: %q %v", line, err)
	}
	l.url = u
	t.Cleanup(func() { l.stop(t) })
	return l
}

func (l *listening) stop(t *testing.T) int {
	t.Helper()
	l.cancel()
	select {
	case c := <-l.code:
		l.code <- c
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("hybridctx mcp --listen did not stop")
		return -1
	}
}

func httpClient(t *testing.T, url string, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// httpClientWhenIdle connects as a client told that every session is busy
// would: it tries again, a bounded number of times. A client's last request
// can still be ending on the server after the client has its answer.
func httpClientWhenIdle(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	var err error
	for range 100 {
		var cs *mcp.ClientSession
		cs, err = mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil).
			Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err == nil {
			t.Cleanup(func() { _ = cs.Close() })
			return cs
		}
		if !strings.Contains(err.Error(), "every one busy") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal(err)
	return nil
}

// catLines is what mcptestserver's cat tool returns for size bytes.
func catLines(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %07d\n", i)
	}
	return b.String()[:n]
}

// pageBack reads ref with read_artifact in pages of page bytes.
func pageBack(t *testing.T, cs *mcp.ClientSession, ref string, page int) []byte {
	t.Helper()
	var got bytes.Buffer
	for off := 0; ; off += page {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_artifact",
			Arguments: map[string]any{"reference": ref, "offset": off, "length": page}})
		if err != nil || res.IsError {
			t.Fatalf("page at %d: %v %v", off, err, res)
		}
		b := []byte(firstText(res))
		got.Write(b)
		if len(b) < page {
			return got.Bytes()
		}
	}
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func TestMCPListen(t *testing.T) {
	bin := mcpServerBin(t)
	l := startListen(t, map[string]string{EnvUser: "ada"}, "--workspace", newWorkspace(t), "--threshold", "1000",
		"--budget", "8192", "--max-sessions", "2", "--", bin)
	a, b := httpClient(t, l.url, nil), httpClient(t, l.url, nil)
	if got := firstText(callTool(t, a, "echo", map[string]any{"text": "hi"})); got != "hi" {
		t.Fatalf("small result %q", got)
	}
	res := callTool(t, a, "cat", map[string]any{"size": 100000})
	ref, _, _ := strings.Cut(firstText(res), "\n")
	if got := pageBack(t, a, ref, 8192); string(got) != catLines(100000) {
		t.Fatalf("paged back %d bytes, not the result", len(got))
	}
	// A listener without tokens has one owner: b reads what a stored.
	if other := callTool(t, b, "read_artifact", map[string]any{"reference": ref, "length": 12}); other.IsError || firstText(other) != "line 0000000" {
		t.Fatalf("another client of the same listener cannot read the artifact: %s", firstText(other))
	}
	// A third session ends an idle one and the other goes on. Which one is
	// the least recently used is mcpproxy's TestListenMaxSessions: here a's
	// last request may still be ending on the server (its client has the
	// answer a moment before) when b's has, so either may go.
	c := httpClientWhenIdle(t, l.url)
	callTool(t, c, "echo", map[string]any{"text": "third"})
	echo := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "evicted?"}}
	_, errA := a.CallTool(context.Background(), echo)
	_, errB := b.CallTool(context.Background(), echo)
	if (errA == nil) == (errB == nil) {
		t.Fatalf("a: %v, b: %v; want exactly one session ended", errA, errB)
	}
	callTool(t, c, "echo", map[string]any{"text": "still"})
	if code := l.stop(t); code != 0 {
		t.Fatalf("exit %d: %s", code, l.stderr.String())
	}
}

func TestMCPListenToken(t *testing.T) {
	bin := mcpServerBin(t)
	const token = "tok-secret-7-0123456789"
	l := startListen(t, map[string]string{EnvUser: "ada", "MCP_TOKEN": token}, "--workspace", newWorkspace(t),
		"--token-env", "MCP_TOKEN", "--", bin)
	resp, err := http.Post(l.url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	hc := &http.Client{Transport: bearer{token}}
	callTool(t, httpClient(t, l.url, hc), "echo", map[string]any{"text": "ok"})
	if l.stop(t); strings.Contains(l.stderr.String(), token) {
		t.Fatalf("the token was printed: %q", l.stderr.String())
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// upstreamServer is an in-process Streamable HTTP MCP server with a "cat"
// tool, recording one request header.
func upstreamServer(t *testing.T, header string) (*httptest.Server, func() []string) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "http-upstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "cat", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Size int }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: catLines(a.Size)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "many", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := &mcp.CallToolResult{}
			for i := 0; i < 200; i++ {
				res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf("%03d %s", i, catLines(996))})
			}
			return res, nil
		})
	var mu sync.Mutex
	var seen []string
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get(header))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

func TestMCPURLUpstream(t *testing.T) {
	srv, seen := upstreamServer(t, "X-Api-Key")
	env := map[string]string{EnvUser: "ada", "API_KEY": "k-42"}
	r := startMCP(t, env, "mcp", "--workspace", newWorkspace(t), "--threshold", "1000", "--budget", "8192",
		"--url", srv.URL, "--header", "X-Api-Key: key=${API_KEY}")
	res := r.call(t, "cat", map[string]any{"size": 50000})
	ref, _, _ := strings.Cut(firstText(res), "\n")
	if got := pageBack(t, r.cs, ref, 8192); string(got) != catLines(50000) {
		t.Fatalf("paged back %d bytes", len(got))
	}
	// 200 blocks of 1000 bytes: each under the threshold, together over
	// the whole-result bound (4000 bytes), and so are their notices: the
	// result is stored whole, one notice and one link.
	many := r.call(t, "many", nil)
	if len(many.Content) != 2 || !strings.Contains(firstText(many), "200 content blocks (200 text)") {
		t.Fatalf("%d blocks: %.200q", len(many.Content), firstText(many))
	}
	for _, v := range seen() {
		if v != "key=k-42" {
			t.Fatalf("the upstream saw header %q", v)
		}
	}
	if code := r.stop(t); code != 0 || strings.Contains(r.stderr.String(), "k-42") {
		t.Fatalf("exit %d, stderr %q", code, r.stderr.String())
	}
}

func TestMCPListenAndURL(t *testing.T) {
	srv, _ := upstreamServer(t, "X-None")
	l := startListen(t, map[string]string{EnvUser: "ada"}, "--workspace", newWorkspace(t), "--threshold", "1000",
		"--url", srv.URL)
	a, b := httpClient(t, l.url, nil), httpClient(t, l.url, nil)
	ref, _, _ := strings.Cut(firstText(callTool(t, a, "cat", map[string]any{"size": 30000})), "\n")
	if got := pageBack(t, a, ref, 4096); string(got) != catLines(30000) {
		t.Fatalf("paged back %d bytes", len(got))
	}
	// One owner for the listener's clients: b reads it too.
	if callTool(t, b, "read_artifact", map[string]any{"reference": ref, "length": 100}).IsError {
		t.Fatal("another client of the listener cannot read the artifact")
	}
}

// EnvTestMCPSDK names the node_modules directory holding the pinned
// TypeScript MCP SDK and Node.js 22 (.ci/conformance.sh --print-sdk
// installs them and .ci/run exports it). Unset, the test looks in
// .ci/conformance/node_modules.
const EnvTestMCPSDK = "HYBRIDCTX_TEST_MCP_SDK"

// typeScriptSDK returns the node binary and the node_modules directory, or
// skips the test when they are not installed (fails instead when CI=true).
func typeScriptSDK(t *testing.T) (node, dir string) {
	t.Helper()
	dir = os.Getenv(EnvTestMCPSDK)
	if dir == "" {
		dir = filepath.Join("..", "..", ".ci", "conformance", "node_modules")
	}
	dir, _ = filepath.Abs(dir)
	node = filepath.Join(dir, ".bin", "node")
	_, sdkErr := os.Stat(filepath.Join(dir, "@modelcontextprotocol", "sdk", "dist", "esm", "client", "streamableHttp.js"))
	_, nodeErr := os.Stat(node)
	if sdkErr != nil || nodeErr != nil {
		msg := "the TypeScript MCP SDK or Node.js 22 is not installed (run .ci/conformance.sh --print-sdk and set " + EnvTestMCPSDK + ")"
		skipE2E(t, EnvTestMCPSDK, msg)
	}
	return node, dir
}

func TestMCPListenTypeScriptClient(t *testing.T) {
	node, sdk := typeScriptSDK(t)
	bin := mcpServerBin(t)
	l := startListen(t, map[string]string{EnvUser: "ada"}, "--workspace", newWorkspace(t), "--", bin)
	const size = 4 << 20
	cmd := exec.Command(node, filepath.Join("testdata", "mcp_http_client.mjs"), l.url, fmt.Sprint(size))
	cmd.Env = append(os.Environ(), EnvTestMCPSDK+"="+sdk)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		ResultBytes      int    `json:"result_bytes"`
		Size             int    `json:"size"`
		SHA256           string `json:"sha256"`
		Total, Pages     int
		OtherIsError     bool `json:"other_is_error"`
		SessionIDsDiffer bool `json:"session_ids_differ"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	sum := sha256.Sum256([]byte(catLines(size)))
	if got.Size != size || got.Total != size || got.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("paged back %d bytes (sha256 %s), want %d", got.Total, got.SHA256, size)
	}
	if got.ResultBytes > 4096 || !got.OtherIsError || !got.SessionIDsDiffer {
		t.Fatalf("result %d bytes, other session read it: %v, ids differ: %v", got.ResultBytes, !got.OtherIsError, got.SessionIDsDiffer)
	}
	t.Logf("TypeScript client: 4 MiB result as %d bytes, read back exact in %d pages", got.ResultBytes, got.Pages)
}

// Clients that never end their sessions (the TypeScript SDK's, here) never
// lock others out: at --max-sessions the least recently used idle session
// ends, its client gets 404 and re-initializes.
func TestMCPListenEvictsIdleSessions(t *testing.T) {
	node, sdk := typeScriptSDK(t)
	bin := mcpServerBin(t)
	l := startListen(t, map[string]string{EnvUser: "ada"}, "--workspace", newWorkspace(t), "--max-sessions", "3", "--", bin)
	cmd := exec.Command(node, filepath.Join("testdata", "mcp_http_evict.mjs"), l.url, "5")
	cmd.Env = append(os.Environ(), EnvTestMCPSDK+"="+sdk)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		First, Again  string
		EvictedStatus int `json:"evicted_status"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.First != "before" || got.EvictedStatus != http.StatusNotFound || got.Again != "after" {
		t.Fatalf("got %+v", got)
	}
}

func FuzzExpandVars(f *testing.F) {
	for _, s := range []string{"", "plain", "${A}", "x${A}y", "${", "${}", "$${A}", "${1}", "${A_B}${A}"} {
		f.Add(s)
	}
	get := func(k string) string {
		if k == "A" {
			return "v"
		}
		return ""
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := expandVars(s, get)
		if err != nil {
			return
		}
		if !strings.Contains(s, "${") && out != s {
			t.Fatalf("%q changed to %q without a variable", s, out)
		}
		if strings.Contains(s, "${A}") && !strings.Contains(out, "v") {
			t.Fatalf("%q: ${A} not expanded in %q", s, out)
		}
	})
}

func TestMCPURLNotMCP(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), []string{"mcp", "--workspace", newWorkspace(t), "--user", "ada",
			"--url", srv.URL + "/mcp?key=sekrit-9"}, Env{Stdin: inR, Stdout: outW, Stderr: stderr, Getenv: func(string) string { return "" }})
		_ = outW.Close()
	}()
	_, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err == nil {
		t.Fatal("initialize through a server that speaks no MCP succeeded")
	}
	_ = inW.Close()
	select {
	case c := <-code:
		msg := stderr.String()
		if c != ExitInternal || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "upstream") || strings.Contains(msg, "sekrit") {
			t.Fatalf("exit %d, stderr %q", c, msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not exit")
	}
}
