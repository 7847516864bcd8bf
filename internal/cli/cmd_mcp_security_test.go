package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPListenTokenNotInUpstream: the variable --token-env names never
// reaches an upstream process, which writes its environment out.
func TestMCPListenTokenNotInUpstream(t *testing.T) {
	bin := mcpServerBin(t)
	const token = "tok-listener-secret-0123456789"
	t.Setenv("MCP_LISTEN_TOKEN", token) // the real environment, which the upstream would inherit
	t.Setenv("MCP_KEEP", "kept")
	out := filepath.Join(t.TempDir(), "env")
	l := startListen(t, map[string]string{EnvUser: "ada", "MCP_LISTEN_TOKEN": token}, "--workspace", newWorkspace(t),
		"--token-env", "MCP_LISTEN_TOKEN", "--", "sh", "-c", `env > "$0"; exec "$1"`, out, bin)
	callTool(t, httpClient(t, l.url, &http.Client{Transport: bearer{token}}), "echo", map[string]any{"text": "ok"})
	env, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(env), "MCP_KEEP=kept") {
		t.Fatalf("the upstream's environment: %v %q", err, env)
	}
	if strings.Contains(string(env), token) || strings.Contains(string(env), "MCP_LISTEN_TOKEN") {
		t.Fatal("the listener's token reached the upstream process")
	}
}

// TestMCPFlagErrorsCategorical: a flag value that does not parse gets one
// line naming the flag and the kind of value, never the parser's error.
func TestMCPFlagErrorsCategorical(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "--threshold", "12abc", "--", "x"}, "--threshold: the value is not a whole number"},
		{[]string{"mcp", "--max-sessions", "99999999999999999999", "--", "x"}, "--max-sessions: the value is not a whole number"},
		{[]string{"mcp", "--idle-timeout", "forever", "--", "x"}, "--idle-timeout: the value is not a duration"},
		{[]string{"offload", "--threshold", "x"}, "--threshold: the value is not a whole number"},
	} {
		var stderr bytes.Buffer
		code := Main(context.Background(), c.args, Env{Stderr: &stderr})
		msg := stderr.String()
		if code != ExitUsage || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%v: exit %d %q", c.args, code, msg)
		}
		for _, raw := range []string{"strconv", "ParseInt", "parsing", "12abc", "forever", "time:"} {
			if strings.Contains(msg, raw) {
				t.Errorf("%v: %q shows %q", c.args, msg, raw)
			}
		}
	}
}

// runURLProxy runs "hybridctx mcp --url u" for one client that initializes
// and returns the exit code and standard error.
func runURLProxy(t *testing.T, u string) (int, string) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), []string{"mcp", "--workspace", newWorkspace(t), "--user", "ada", "--url", u,
			"--header", "Authorization: Bearer ${SECRET}", "--header", "X-Api-Key: ${SECRET}"},
			Env{Stdin: inR, Stdout: outW, Stderr: stderr, Getenv: func(k string) string {
				return map[string]string{"SECRET": "hdr-secret-42"}[k]
			}})
		_ = outW.Close()
	}()
	_, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err == nil {
		t.Fatal("initialize succeeded")
	}
	_ = inW.Close()
	select {
	case c := <-code:
		return c, stderr.String()
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not exit")
	}
	return 0, ""
}

// TestMCPURLFailureLines: a redirect to another origin, a foreign SSE
// endpoint and malformed HTTP each end the command with one categorical
// line: no URL, no header value, no server bytes. Nothing reaches the
// other origin.
func TestMCPURLFailureLines(t *testing.T) {
	var mu sync.Mutex
	var got []string
	trapL, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		trapL, _ = net.Listen("tcp", "127.0.0.1:0")
	}
	trap := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.String())
		mu.Unlock()
	}))
	trap.Listener.Close()
	trap.Listener = trapL
	trap.Start()
	defer trap.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, trap.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: endpoint\ndata: "+trap.URL+"/msg\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer endpoint.Close()
	malformed, _ := net.Listen("tcp", "127.0.0.1:0")
	defer malformed.Close()
	go func() {
		for {
			c, err := malformed.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 8192)
			_, _ = c.Read(buf)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nMcp-Session-Id: abc\x01def\r\nContent-Length: 0\r\n\r\n")
			c.Close()
		}
	}()
	for u, want := range map[string]string{
		redirect.URL + "/mcp":                          "redirected to another origin",
		endpoint.URL + "/sse":                          "endpoint is on another origin",
		"http://" + malformed.Addr().String() + "/mcp": "response is malformed",
	} {
		code, msg := runURLProxy(t, u)
		if code != ExitInternal || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "hybridctx: the upstream MCP server could not be reached: ") ||
			!strings.Contains(msg, want) {
			t.Errorf("%s: exit %d %q, want %q", u, code, msg, want)
		}
		for _, leak := range []string{trap.URL, strings.TrimPrefix(trap.URL, "http://"), "hdr-secret", "abc", "http://"} {
			if strings.Contains(msg, leak) {
				t.Errorf("%s: %q shows %q", u, msg, leak)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) > 0 {
		t.Fatalf("the other origin received %q", got)
	}
}

// TestMCPListenAllowOrigin: --allow-origin admits browser requests from
// that origin; a loopback origin on another port stays refused.
func TestMCPListenAllowOrigin(t *testing.T) {
	bin := mcpServerBin(t)
	l := startListen(t, map[string]string{EnvUser: "ada"}, "--workspace", newWorkspace(t),
		"--allow-origin", "http://localhost:5173", "--", bin)
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for origin, want := range map[string]int{"http://localhost:5173": 200, "http://localhost:5174": 403, "http://127.0.0.1:5173": 403} {
		req, _ := http.NewRequest(http.MethodPost, l.url, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %s: %d, want %d", origin, resp.StatusCode, want)
		}
	}
}
