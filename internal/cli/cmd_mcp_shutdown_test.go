package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gone reports whether the process pid has exited (a zombie nobody reaps
// counts as exited).
func gone(pid int) bool {
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return true
		}
		// pid (comm) STATE …: the state follows the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
	}
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// waitGone polls until pid is gone; the deadline only detects a hang.
func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // the test's own process
			t.Fatalf("the %s (pid %d) is still running", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readPid waits for mcptestserver's --pidfile.
func readPid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(string(b)); err == nil && perr == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid file: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The TypeScript SDK's StdioClientTransport.close() (stdin closed, SIGTERM
// after 2 s): the proxy exits on its own, before the SDK signals it, even
// with a server that outlives its standard input; it leaves no process
// behind and writes its run summary.
func TestMCPStdioCloseByTypeScriptSDK(t *testing.T) {
	node, sdk := typeScriptSDK(t)
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	bin := mcpServerBin(t)
	dir := t.TempDir()
	pidfile, events := filepath.Join(dir, "server.pid"), filepath.Join(dir, "events.jsonl")
	cmd := exec.Command(node, filepath.Join("testdata", "mcp_stdio_close.mjs"), binPath, "mcp", "--workspace", newWorkspace(t),
		"--events", events, "--", bin, "--pidfile", pidfile, "--linger")
	cmd.Env = append(os.Environ(), EnvTestMCPSDK+"="+sdk, EnvUser+"=ada")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		Echo     string
		PID      int
		ExitCode *int   `json:"exit_code"`
		Signal   string `json:"signal"`
		CloseMS  int    `json:"close_ms"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Echo != "hi" || got.ExitCode == nil || *got.ExitCode != 0 || got.Signal != "" {
		t.Fatalf("the proxy did not exit on its own: %s", out)
	}
	waitGone(t, "proxy", got.PID)
	waitGone(t, "upstream server", readPid(t, pidfile))
	lines := readLines(t, events)
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], `"type":"run_summary"`) {
		t.Fatalf("no run summary: %q", lines)
	}
	t.Logf("StdioClientTransport.close(): the proxy exited 0 after %d ms", got.CloseMS)
}

// A proxy killed with SIGKILL takes its upstream server along, even one
// that outlives its standard input.
func TestMCPKilledProxyLeavesNoServer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the upstream dies with a killed proxy on Linux only (Pdeathsig)")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	bin := mcpServerBin(t)
	pidfile := filepath.Join(t.TempDir(), "server.pid")
	cmd := exec.Command(binPath, "mcp", "--workspace", newWorkspace(t), "--", bin, "--pidfile", pidfile, "--linger")
	cmd.Env = append(os.Environ(), EnvUser+"=ada")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	server := readPid(t, pidfile)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, "upstream server", server)
}

// SIGTERM: the proxy, over stdio or --listen, closes its upstreams, writes
// the run summary and exits 143, the code its help lists.
func TestMCPSIGTERM(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	bin := mcpServerBin(t)
	for _, listen := range []bool{false, true} {
		dir := t.TempDir()
		pidfile, events := filepath.Join(dir, "server.pid"), filepath.Join(dir, "events.jsonl")
		args := []string{"mcp", "--workspace", newWorkspace(t), "--events", events}
		if listen {
			args = append(args, "--listen", "127.0.0.1:0")
		}
		cmd := exec.Command(binPath, append(args, "--", bin, "--pidfile", pidfile, "--linger")...)
		cmd.Env = append(os.Environ(), EnvUser+"=ada")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := &lockedBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		server := 0
		if !listen {
			server = readPid(t, pidfile)
		} else {
			for deadline := time.Now().Add(15 * time.Second); !strings.Contains(stderr.String(), "serving MCP at"); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("not listening: %s", stderr.String())
				}
			}
			// One session, with its own lingering upstream process.
			_, url, _ := strings.Cut(strings.TrimSpace(stderr.String()), "serving MCP at ")
			url, _, _ = strings.Cut(url, "\n")
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "term", Version: "1"}, nil).
				Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			server = readPid(t, pidfile)
		}
		start := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("listen=%v: the proxy did not stop", listen)
		}
		_ = stdin.Close()
		took := time.Since(start)
		waitGone(t, "upstream server", server)
		if lines := readLines(t, events); len(lines) == 0 || !strings.Contains(lines[len(lines)-1], `"type":"run_summary"`) {
			t.Fatalf("listen=%v: no run summary: %q; stderr %s", listen, lines, stderr.String())
		}
		t.Logf("listen=%v: stopped %v after SIGTERM, exit %d", listen, took.Round(time.Millisecond), cmd.ProcessState.ExitCode())
		if code := cmd.ProcessState.ExitCode(); code != ExitTerminated || !strings.Contains(stderr.String(), "interrupted by SIGTERM") {
			t.Fatalf("listen=%v: exit %d, stderr %q; want %d", listen, code, stderr.String(), ExitTerminated)
		}
		if !slices.Contains(commandExits["mcp"], ExitTerminated) {
			t.Fatal("the mcp help does not list the exit code of SIGTERM")
		}
	}
}
