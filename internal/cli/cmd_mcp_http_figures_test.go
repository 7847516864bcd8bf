package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/internal/procstat"
)

// countingBody counts the response bytes an HTTP client reads.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type countingRT struct{ n *atomic.Int64 }

func (c countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, c.n}
	}
	return resp, err
}

// peakRSS returns a process's VmHWM, for the log.
func peakRSS(pid int) string {
	n, err := procstat.Bytes(pid, "VmHWM")
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

func percentiles(d []time.Duration) (p50, p95 time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*95/100]
}

func timeCalls(t *testing.T, cs *mcp.ClientSession, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Since(start))
	}
	return out
}

// TestMCPListenFigures measures what the closing note reports (run with
// HYBRIDCTX_MCP_FIGURES=1): per-call latency of a small tools/call directly
// over stdio and through --listen, and 16 concurrent sessions each reading a
// 4 MiB result back in 64 KiB pages (bytes reaching the clients, the
// proxy's peak RSS, every page exact). Times are logged, never asserted.
func TestMCPListenFigures(t *testing.T) {
	if os.Getenv(EnvMCPFigures) != "1" {
		t.Skip("set " + EnvMCPFigures + "=1 to measure")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	bin := mcpServerBin(t)
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

	cmd := exec.Command(binPath, "mcp", "--workspace", newWorkspace(t), "--user", "ada", "--listen", "127.0.0.1:0", "--", bin)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	_, url, ok := strings.Cut(strings.TrimSpace(line), "serving MCP at ")
	if !ok {
		t.Fatalf("no URL: %q", line)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	via := httpClient(t, url, nil)
	for round := 0; round < 3; round++ {
		d50, d95 := percentiles(timeCalls(t, direct, 300))
		v50, v95 := percentiles(timeCalls(t, via, 300))
		t.Logf("small tools/call, round %d: direct stdio p50 %v p95 %v; through --listen p50 %v p95 %v", round, d50, d95, v50, v95)
	}
	_ = via.Close() // room for 16 sessions

	const size = 4 << 20
	want := catLines(size)
	var received atomic.Int64
	var wg sync.WaitGroup
	exact := atomic.Int64{}
	start := time.Now()
	sessions := 16
	if n, err := strconv.Atoi(os.Getenv("HYBRIDCTX_MCP_FIGURES_SESSIONS")); err == nil && n > 0 {
		sessions = n
	}
	for i := 0; i < sessions; i++ {
		cs := httpClient(t, url, &http.Client{Transport: countingRT{&received}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "cat", Arguments: map[string]any{"size": size}})
			if err != nil {
				t.Error(err)
				return
			}
			ref, _, _ := strings.Cut(firstText(res), "\n")
			var got strings.Builder
			for off := 0; ; off += 65536 {
				page, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_artifact",
					Arguments: map[string]any{"reference": ref, "offset": off, "length": 65536}})
				if err != nil || page.IsError {
					t.Errorf("page at %d: %v", off, err)
					return
				}
				s := firstText(page)
				if s != want[off:off+len(s)] {
					t.Errorf("page at %d differs", off)
					return
				}
				got.WriteString(s)
				if len(s) < 65536 {
					break
				}
			}
			if got.String() == want {
				exact.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d sessions × 4 MiB: %v, %d bytes reached the clients (results and pages), %d read back exact, proxy peak RSS %s",
		sessions, time.Since(start), received.Load(), exact.Load(), peakRSS(cmd.Process.Pid))
	if exact.Load() != int64(sessions) {
		t.Fatal("not every session read its result back exact")
	}
}
