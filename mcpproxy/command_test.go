package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// helperEnv makes the test binary act as an upstream MCP server on stdio:
// "serve" exits when its input closes, "hang" never exits by itself,
// "stubborn" also ignores SIGTERM.
const helperEnv = "HYBRIDCTX_MCPPROXY_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperServer(mode))
	}
	os.Exit(m.Run())
}

func helperServer(mode string) int {
	fmt.Fprintln(os.Stderr, "helper: ready")
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
		mode = "hang"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "big", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Size int }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return textResult(text(a.Size)), nil
	})
	s.AddTool(&mcp.Tool{Name: "crash", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "helper: crashing")
		os.Exit(3)
		return nil, nil
	})
	err := s.Run(context.Background(), &mcp.StdioTransport{})
	if mode == "hang" {
		select {}
	}
	if err != nil {
		return 1
	}
	return 0
}

// syncBuffer is a bytes.Buffer safe for the process's stderr copier.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// commandRig runs the proxy over the helper process.
type commandRig struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan error
}

func newCommandRig(t *testing.T, mode string, c *Command) *commandRig {
	t.Helper()
	r := &commandRig{stderr: &syncBuffer{}, done: make(chan error, 1)}
	r.cmd = exec.Command(os.Args[0], "-test.run=^$")
	r.cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	r.cmd.Stderr = r.stderr
	c.Cmd = r.cmd
	p := proxyFor(t, openStore(t, "mem://"), owner("s1"), nil)
	proxyT, clientT := mcp.NewInMemoryTransports()
	go func() { r.done <- p.Run(context.Background(), c, proxyT) }()
	var err error
	r.cs, err = mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *commandRig) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the proxy did not stop")
		return nil
	}
}

func TestCommandUpstream(t *testing.T) {
	// The helper exits by itself once its stdin closes; a generous
	// TerminateDuration keeps a slow (-race, loaded) exit from being
	// taken for a hang.
	r := newCommandRig(t, "serve", &Command{TerminateDuration: time.Minute})
	res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"size": 3 * testThreshold}})
	if err != nil || len(res.Content) != 2 {
		t.Fatalf("%v %s", err, dump(res))
	}
	_ = r.cs.Close()
	if err := r.wait(t); err != nil {
		t.Fatalf("Run after the client closed: %v", err)
	}
	if r.cmd.ProcessState == nil || !r.cmd.ProcessState.Exited() || r.cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("upstream state %v", r.cmd.ProcessState)
	}
	if !strings.Contains(r.stderr.String(), "helper: ready") {
		t.Fatalf("upstream stderr %q", r.stderr.String())
	}
}

func TestCommandUpstreamCrash(t *testing.T) {
	r := newCommandRig(t, "serve", &Command{})
	defer r.cs.Close()
	_, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "upstream MCP server exited") {
		t.Fatalf("the pending call: %v", err)
	}
	err = r.wait(t)
	if !errors.Is(err, ErrUpstreamClosed) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(r.stderr.String(), "helper: crashing") {
		t.Fatalf("upstream stderr %q", r.stderr.String())
	}
}

func TestCommandMessageLimit(t *testing.T) {
	r := newCommandRig(t, "serve", &Command{MaxMessageBytes: 32 << 10})
	// Under the limit, fine; over it, that call gets an error and the
	// session goes on.
	if _, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"size": 16 << 10}}); err != nil {
		t.Fatal(err)
	}
	_, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"size": 64 << 10}})
	if err == nil || !strings.Contains(err.Error(), "exceeds the message size limit") {
		t.Fatalf("a message over the limit: %v", err)
	}
	if _, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"size": 3 * testThreshold}}); err != nil {
		t.Fatalf("after the refused message: %v", err)
	}
	_ = r.cs.Close()
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestCommandTerminates(t *testing.T) {
	r := newCommandRig(t, "hang", &Command{TerminateDuration: 50 * time.Millisecond})
	_ = r.cs.Close()
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if r.cmd.ProcessState == nil || r.cmd.ProcessState.Exited() {
		t.Fatalf("want the hanging upstream ended by a signal, got %v", r.cmd.ProcessState)
	}
}

func TestCommandStartErrors(t *testing.T) {
	p := proxyFor(t, openStore(t, "mem://"), owner("s1"), nil)
	_, proxyT := mcp.NewInMemoryTransports()
	err := p.Run(context.Background(), &Command{Cmd: exec.Command("/nonexistent/mcp-server")}, proxyT)
	if !errors.Is(err, ErrUpstreamStart) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Run: %v", err)
	}
	if err := p.Run(context.Background(), &Command{}, proxyT); !errors.Is(err, ErrUpstreamStart) {
		t.Fatalf("no Cmd: %v", err)
	}
}
