package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testServer is the mcptestserver program, built once into testServerDir,
// which TestMain removes.
var testServer = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "hybridctx-mcptestserver-")
	if err != nil {
		return "", err
	}
	testServerDir = dir
	bin := filepath.Join(dir, "mcptestserver")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/hybridctx/hybridctx/mcpproxy/internal/mcptestserver").CombinedOutput()
	if err != nil {
		return "", &exec.ExitError{Stderr: out}
	}
	return bin, nil
})

// testServerDir is the directory testServer built into, once it has.
var testServerDir string

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// mcpRun is one in-process "hybridctx mcp" with a client connected to it.
type mcpRun struct {
	cs     *mcp.ClientSession
	stdin  io.Closer // the proxy's standard input: closing it ends the client
	stderr *lockedBuffer
	code   chan int
}

// startMCP runs Main with args and connects a client over pipes.
func startMCP(t *testing.T, env map[string]string, args ...string) *mcpRun {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &mcpRun{stdin: inW, stderr: &lockedBuffer{}, code: make(chan int, 1)}
	go func() {
		r.code <- Main(context.Background(), args, Env{Stdin: inR, Stdout: outW, Stderr: r.stderr,
			Getenv: func(k string) string { return env[k] }})
		_ = outW.Close()
	}()
	var err error
	r.cs, err = mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr %s", err, r.stderr.String())
	}
	return r
}

// stop closes the client and returns the exit code.
func (r *mcpRun) stop(t *testing.T) int {
	t.Helper()
	_ = r.cs.Close()
	_ = r.stdin.Close()
	select {
	case c := <-r.code:
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("hybridctx mcp did not exit")
		return -1
	}
}

func (r *mcpRun) call(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func mcpServerBin(t *testing.T) string {
	t.Helper()
	bin, err := testServer()
	if err != nil {
		t.Fatalf("building mcptestserver: %v", err)
	}
	return bin
}

func firstText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

func TestMCPCommand(t *testing.T) {
	bin := mcpServerBin(t)
	ws := newWorkspace(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	env := map[string]string{EnvUser: "grace", EnvWorkflow: "wf"}
	r := startMCP(t, env, "mcp", "--workspace", ws, "--session", "pinned", "--threshold", "1000",
		"--budget", "3000", "--events", events, "--", bin)

	if got := firstText(r.call(t, "echo", map[string]any{"text": "hi"})); got != "hi" {
		t.Fatalf("small result %q", got)
	}
	res := r.call(t, "cat", map[string]any{"size": 5000})
	ref, _, _ := strings.Cut(firstText(res), "\n")
	if len(res.Content) != 2 || !strings.HasPrefix(ref, "artifact://sha256/") {
		t.Fatalf("large result %v", firstText(res))
	}
	page := r.call(t, "read_artifact", map[string]any{"reference": ref, "offset": 0, "length": 26})
	if got := firstText(page); got != "line 0000000\nline 0000001\n" {
		t.Fatalf("page %q", got)
	}
	over := r.call(t, "read_artifact", map[string]any{"reference": ref})
	if !over.IsError || !strings.Contains(firstText(over), "the range is 5000 bytes, the budget 3000") {
		t.Fatalf("over budget %q", firstText(over))
	}
	if code := r.stop(t); code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, r.stderr.String())
	}
	if !strings.Contains(r.stderr.String(), "mcptestserver: ready") {
		t.Fatalf("the server's stderr did not pass: %q", r.stderr.String())
	}

	// The events file: one event per decision, then the run summary.
	lines := readLines(t, events)
	if len(lines) != 5 {
		t.Fatalf("%d event lines: %q", len(lines), lines)
	}
	var sum struct {
		Type       string                                 `json:"type"`
		RunID      string                                 `json:"run_id"`
		Decisions  map[string]map[string]map[string]int64 `json:"decisions"`
		KeptOut    int64                                  `json:"bytes_kept_out_of_context"`
		Rehydrated int64                                  `json:"bytes_rehydrated"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]map[string]int64{
		"offload":     {"inline": {"below_threshold": 1}, "offloaded": {"threshold_exceeded": 1}},
		"rehydration": {"resolved": {"digest_verified": 1}, "over_budget": {"budget_exceeded": 1}},
	}
	if sum.Type != "run_summary" || sum.RunID == "" || sum.KeptOut != 5000-82 || sum.Rehydrated != 26 || !reflect.DeepEqual(sum.Decisions, want) {
		t.Fatalf("summary %s", lines[len(lines)-1])
	}
	// "grace" has letters no hex digest or run id can hold.
	for _, l := range lines {
		if strings.Contains(l, "grace") || strings.Contains(l, "pinned") || strings.Contains(l, ws) {
			t.Fatalf("owner or path in an event: %s", l)
		}
	}

	// The pinned session keeps its artifacts across proxy processes, and the
	// command line sees them as this owner's.
	r2 := startMCP(t, env, "mcp", "--workspace", ws, "--session", "pinned", "--", bin)
	if got := r2.call(t, "read_artifact", map[string]any{"reference": ref, "length": 5}); got.IsError {
		t.Fatalf("pinned session: %q", firstText(got))
	}
	r2.stop(t)
	if ls := run(t, "ls", "--workspace", ws, "--user", "grace", "--workflow", "wf", "--session", "pinned"); ls.code != 0 || !strings.Contains(ls.stdout, ref) {
		t.Fatalf("ls: %+v", ls)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func TestMCPUpstreamCrash(t *testing.T) {
	r := startMCP(t, nil, "mcp", "--workspace", newWorkspace(t), "--", mcpServerBin(t))
	if _, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}}); err == nil {
		t.Fatal("the crashing call succeeded")
	}
	code := r.stop(t)
	last := strings.TrimSpace(r.stderr.String())
	if i := strings.LastIndex(last, "\n"); i >= 0 {
		last = last[i+1:]
	}
	if code != ExitInternal || last != "hybridctx: the upstream MCP server exited: exit status 3" {
		t.Fatalf("exit %d, last stderr line %q", code, last)
	}
}

func TestMCPUsageErrors(t *testing.T) {
	ws := newWorkspace(t)
	cases := map[string]struct {
		args []string
		want string
	}{
		"no command":      {[]string{"mcp"}, "name the MCP server"},
		"bad threshold":   {[]string{"mcp", "--threshold", "0", "--", "x"}, "--threshold must be > 0"},
		"bad budget":      {[]string{"mcp", "--budget", "-1", "--", "x"}, "--budget must be > 0"},
		"bad max-bytes":   {[]string{"mcp", "--max-bytes", "-1", "--", "x"}, "--max-bytes must be >= 0"},
		"bad max-message": {[]string{"mcp", "--max-message", "0", "--", "x"}, "--max-message must be > 0"},
		"url and command": {[]string{"mcp", "--url", "http://127.0.0.1:1/mcp", "x", "-y"}, "not both"},
		"no such program": {[]string{"mcp", "--workspace", ws, "--", "/nonexistent/server"}, "cannot start the upstream MCP server"},
		"bad owner":       {[]string{"mcp", "--user", " ", "--", "x"}, "owner"},
	}
	for name, c := range cases {
		r := run(t, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("%s: exit %d stdout %q stderr %q, want %q", name, r.code, r.stdout, r.stderr, c.want)
		}
	}
}

// TestMCPFlagsEndAtTheCommand: the proxy's flags end at the upstream
// command's name, with or without "--"; what follows is the command's own,
// flags and "--" included, exactly as given.
func TestMCPFlagsEndAtTheCommand(t *testing.T) {
	bin := mcpServerBin(t)
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	// The upstream writes its arguments out, then becomes the test server.
	script := `printf '%s\n' "$@" > "$0"; exec "$ARGS_SERVER"`
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"without --":       {[]string{"--threshold", "100", "sh", "-c", script, argsFile, "-y", "--threshold", "7", "--", "x"}, "-y\n--threshold\n7\n--\nx\n"},
		"with --":          {[]string{"--threshold", "100", "--", "sh", "-c", script, argsFile, "-y", "DIR"}, "-y\nDIR\n"},
		"global flag last": {[]string{"sh", "-c", script, argsFile, "--workspace", "elsewhere"}, "--workspace\nelsewhere\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("ARGS_SERVER", bin)
			_ = os.Remove(argsFile)
			r := startMCP(t, nil, append([]string{"mcp", "--workspace", newWorkspace(t)}, c.args...)...)
			if res := r.call(t, "echo", map[string]any{"text": "hi"}); res.IsError {
				t.Fatalf("echo: %v", res)
			}
			if code := r.stop(t); code != 0 {
				t.Fatalf("exit %d; stderr %s", code, r.stderr.String())
			}
			if got, _ := os.ReadFile(argsFile); string(got) != c.want {
				t.Fatalf("upstream arguments %q, want %q", got, c.want)
			}
		})
	}
}

func TestMCPBadClientInput(t *testing.T) {
	bin := mcpServerBin(t)
	r := startMCP(t, nil, "mcp", "--workspace", newWorkspace(t), "--max-message", "65536", "--", bin)
	in := r.stdin.(io.Writer)
	for _, l := range []string{"not json SECRET-1", "[]", "42", `{"id":"x-1","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x-2","method":"tools/call","params":{"arguments":{"a":"SECRET-2` + strings.Repeat("a", 100000) + `"}}}`} {
		if _, err := io.WriteString(in, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// The session goes on, and takes messages up to --max-message.
	res := r.call(t, "echo", map[string]any{"text": strings.Repeat("b", 40000)})
	if res.IsError {
		t.Fatalf("after bad input: %v", res)
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit %d; stderr %s", code, r.stderr.String())
	}
	logged := r.stderr.String()
	if n := strings.Count(logged, "message dropped"); n != 5 || strings.Contains(logged, "SECRET") || strings.Contains(logged, "x-1") {
		t.Fatalf("%d drops logged:\n%s", n, logged)
	}
}

// TestMCPUnreachableURLExits: with --url where nothing listens, the
// client's initialize fails with an error saying so, and the command ends
// (exit 1, one line naming the cause) while the client is still connected.
func TestMCPUnreachableURLExits(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/mcp"
	_ = l.Close()
	inR, inW := io.Pipe()
	defer inW.Close()
	outR, outW := io.Pipe()
	stderr := &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- Main(context.Background(), []string{"mcp", "--workspace", newWorkspace(t), "--url", url},
			Env{Stdin: inR, Stdout: outW, Stderr: stderr, Getenv: func(string) string { return "" }})
		_ = outW.Close()
	}()
	_, err = mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err == nil || !strings.Contains(err.Error(), "could not be sent to the upstream MCP server") {
		t.Fatalf("connect: %v", err)
	}
	select {
	case c := <-code:
		line := strings.TrimSpace(stderr.String())
		if c != ExitInternal || !strings.HasPrefix(line, "hybridctx: the upstream MCP server could not be reached: ") ||
			strings.Count(line, "\n") != 0 || !strings.Contains(line, "connection refused") {
			t.Fatalf("exit %d, stderr %q", c, line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("hybridctx mcp did not exit while its client stayed connected")
	}
}
