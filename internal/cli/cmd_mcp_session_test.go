package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// proxyProcess runs the built hybridctx binary as "hybridctx mcp ARGS" with a
// Go SDK client on its standard input and output.
func proxyProcess(t *testing.T, env []string, args ...string) *mcp.ClientSession {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	cmd := exec.Command(binPath, append([]string{"mcp"}, args...)...)
	cmd.Env = env
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "restart-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return firstText(res), res.IsError
}

// A client that restarts its server (a resumed conversation, one process
// per call) keeps reading its references: the default session is stable.
// --session new isolates each process instead.
func TestMCPDefaultSessionOutlivesTheProcess(t *testing.T) {
	bin := mcpServerBin(t)
	ws := newWorkspace(t)
	env := append(os.Environ(), EnvUser+"=ada")
	for _, k := range []string{EnvWorkflow, EnvSession} {
		env = append(env, k+"=")
	}
	first := proxyProcess(t, env, "--workspace", ws, "--threshold", "100", "--", bin)
	text, _ := callText(t, first, "cat", map[string]any{"size": 500})
	ref, _, _ := strings.Cut(text, "\n")
	if !strings.HasPrefix(ref, "artifact://sha256/") {
		t.Fatalf("no reference: %q", text)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := proxyProcess(t, env, "--workspace", ws, "--threshold", "100", "--", bin)
	defer second.Close()
	if got, isErr := callText(t, second, "read_artifact", map[string]any{"reference": ref, "length": 12}); isErr || got != "line 0000000" {
		t.Fatalf("the second process read %q (error %v)", got, isErr)
	}

	isolated := proxyProcess(t, env, "--workspace", ws, "--threshold", "100", "--session", "new", "--", bin)
	defer isolated.Close()
	if got, isErr := callText(t, isolated, "read_artifact", map[string]any{"reference": ref}); !isErr || !strings.Contains(got, "unauthorized") {
		t.Fatalf("--session new read another process's artifact: %q", got)
	}
	// Two --session new processes do not share either.
	text, _ = callText(t, isolated, "cat", map[string]any{"size": 600})
	ref2, _, _ := strings.Cut(text, "\n")
	other := proxyProcess(t, env, "--workspace", ws, "--threshold", "100", "--session", "new", "--", bin)
	defer other.Close()
	if got, isErr := callText(t, other, "read_artifact", map[string]any{"reference": ref2}); !isErr || !strings.Contains(got, "unauthorized") {
		t.Fatalf("one --session new process read another's artifact: %q", got)
	}
}

// inspectorCLI returns the entry point of the MCP Inspector's CLI mode
// (pinned in .ci/npm), or skips the test when it is not installed (fails
// instead when CI=true).
func inspectorCLI(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(EnvTestMCPServers)
	if dir == "" {
		dir = filepath.Join("..", "..", ".ci", "npm", "node_modules")
	}
	entry, err := filepath.Abs(filepath.Join(dir, "@modelcontextprotocol", "inspector-cli", "build", "index.js"))
	_, statErr := os.Stat(entry)
	_, nodeErr := exec.LookPath("node")
	if err != nil || statErr != nil || nodeErr != nil {
		msg := "the MCP Inspector CLI or node is not installed (run .ci/mcp-servers.sh and set " + EnvTestMCPServers + ")"
		skipE2E(t, EnvTestMCPServers, msg)
	}
	return entry
}

// The MCP Inspector's CLI runs one proxy process per call: a reference from
// the first call reads back in the second, with no --session given.
func TestMCPInspectorOneProcessPerCall(t *testing.T) {
	cli := inspectorCLI(t)
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	bin := mcpServerBin(t)
	ws := newWorkspace(t)
	inspect := func(tool string, args ...string) string {
		t.Helper()
		// The Inspector splits its own arguments at the first "--"; the
		// second one reaches hybridctx.
		argv := []string{cli, binPath, "mcp", "--workspace", ws, "--threshold", "100",
			"--method", "tools/call", "--tool-name", tool}
		for _, a := range args {
			argv = append(argv, "--tool-arg", a)
		}
		cmd := exec.Command("node", append(argv, "--", "--", bin)...)
		cmd.Env = append(os.Environ(), EnvUser+"=ada", EnvSession+"=", EnvWorkflow+"=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector %s: %v\n%s", tool, err, stderr.String())
		}
		var res struct {
			Content []struct{ Type, Text string }
			IsError bool
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res.Content) == 0 || res.IsError {
			t.Fatalf("inspector %s: %v: %s", tool, err, out)
		}
		return res.Content[0].Text
	}
	text := strings.Repeat("0123456789", 30)
	ref, _, _ := strings.Cut(inspect("echo", "text="+text), "\n")
	if !strings.HasPrefix(ref, "artifact://sha256/") {
		t.Fatalf("no reference: %q", ref)
	}
	if got := inspect("read_artifact", "reference="+ref); got != text {
		t.Fatalf("the second process read %q", got)
	}
}

// The whole-result bound through the real binary over stdio: 200 and 2,000
// blocks of 4 KB each (the larger result is bounded as it streams in) reach
// the client as at most --result-threshold + 1 KiB, and query_artifact with
// .[i] reads block i back exactly.
func TestMCPWholeResultBound(t *testing.T) {
	skipUnlessLong(t)
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	bin := mcpServerBin(t)
	env := append(os.Environ(), EnvUser+"=ada")
	var n atomic.Int64
	cmd := exec.Command(binPath, "mcp", "--workspace", newWorkspace(t), "--threshold", "16384", "--", bin)
	cmd.Env = env
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bound-test", Version: "1"}, nil).
		Connect(context.Background(), countingTransport{&mcp.CommandTransport{Command: cmd}, &n}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	const bound = 4*16384 + 1024
	for _, blocks := range []int{200, 2000} {
		before := n.Load()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "blocks", Arguments: map[string]any{"n": blocks, "size": 4096}})
		if err != nil {
			t.Fatal(err)
		}
		sent := n.Load() - before
		if sent > bound || len(res.Content) != 2 {
			t.Fatalf("%d blocks: %d bytes in %d blocks reached the client", blocks, sent, len(res.Content))
		}
		t.Logf("%d blocks of 4 KB: %d bytes reached the client", blocks, sent)
		ref := res.Content[1].(*mcp.ResourceLink).URI
		for _, i := range []int{0, blocks / 3, blocks - 1} {
			got, isErr := callText(t, cs, "query_artifact", map[string]any{"reference": ref, "filter": fmt.Sprintf(".[%d].text", i)})
			want := fmt.Sprintf("block %06d ", i)
			want += strings.Repeat("x", 4096-len(want))
			if line, _, _ := strings.Cut(got, "\n"); isErr || line != `"`+want+`"` {
				t.Fatalf("block %d read back as %.60q", i, got)
			}
		}
	}
}

// --listen without tokens has one owner for all its MCP sessions (the
// default session, or the one --session NAME pins); --session new gives
// each MCP session its own.
func TestMCPListenSessions(t *testing.T) {
	bin := mcpServerBin(t)
	for _, tc := range []struct {
		session string
		shared  bool
	}{{"", true}, {"new", false}, {"pinned", true}} {
		args := []string{"--workspace", newWorkspace(t), "--threshold", "100"}
		if tc.session != "" {
			args = append(args, "--session", tc.session)
		}
		l := startListen(t, map[string]string{EnvUser: "ada"}, append(args, "--", bin)...)
		a, b := httpClient(t, l.url, nil), httpClient(t, l.url, nil)
		ref, _, _ := strings.Cut(firstText(callTool(t, a, "cat", map[string]any{"size": 500})), "\n")
		if got := callTool(t, b, "read_artifact", map[string]any{"reference": ref}); got.IsError == tc.shared {
			t.Fatalf("--session %q: the other MCP session read it: %v", tc.session, !got.IsError)
		}
		l.stop(t)
	}
}
