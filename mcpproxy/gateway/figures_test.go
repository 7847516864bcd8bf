package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/internal/procstat"
)

// The figures of docs/gateway.md and BENCHMARKS.md that need the real
// binary and real server processes: measurements, long tests, never
// asserting a time.

// buildFigureBinaries builds hybridctx and the Go test server into a
// temporary directory.
func buildFigureBinaries(t *testing.T) (hybridctx, testServer string) {
	t.Helper()
	dir := t.TempDir()
	hybridctx, testServer = filepath.Join(dir, "hybridctx"), filepath.Join(dir, "mcptestserver")
	for bin, pkg := range map[string]string{hybridctx: "github.com/hybridctx/hybridctx/cmd/hybridctx",
		testServer: "github.com/hybridctx/hybridctx/mcpproxy/internal/mcptestserver"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return hybridctx, testServer
}

// gatewayProcess is `hybridctx mcp --config` run as a process, with a
// client on its standard input and output.
type gatewayProcess struct {
	cmd *exec.Cmd
	cs  *mcp.ClientSession
}

// startGateway runs the binary over config (a {"mcpServers": …} object)
// and connects a client; it returns once the gateway answered initialize.
func startGateway(t *testing.T, bin string, servers map[string]any) *gatewayProcess {
	t.Helper()
	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": servers})
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "mcp", "--workspace", filepath.Join(dir, "ws"), "--config", path)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "figures", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &gatewayProcess{cmd: cmd, cs: cs}
	t.Cleanup(func() { _ = cs.Close() })
	return p
}

// peakRSS is the process's peak resident set (VmHWM), in MiB.
func (p *gatewayProcess) peakRSS(t *testing.T) float64 {
	t.Helper()
	n, err := procstat.Bytes(p.cmd.Process.Pid, "VmHWM")
	if err != nil {
		t.Skip(err)
	}
	return float64(n) / (1 << 20)
}

// cpu is the CPU time the process has used so far (user and system).
func (p *gatewayProcess) cpu(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// The fields after the command's name, which is in parentheses:
	// state is the first, utime and stime the 12th and 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var user, sys int64
	if len(f) < 13 {
		t.Skip("an unknown /proc/PID/stat")
	}
	_, _ = fmt.Sscan(f[11], &user)
	_, _ = fmt.Sscan(f[12], &sys)
	return time.Duration(user+sys) * time.Second / 100 // USER_HZ
}

// quantiles returns the p50 and p99 of lat.
// figures skips a measurement unless HYBRIDCTX_GATEWAY_FIGURES=1: the
// figures of docs/gateway.md, minutes of CPU and a gigabyte of memory, are
// measured on demand, not in every CI run.
func figures(t *testing.T) {
	t.Helper()
	if os.Getenv("HYBRIDCTX_GATEWAY_FIGURES") != "1" {
		t.Skip("figures: set HYBRIDCTX_GATEWAY_FIGURES=1")
	}
}

func quantiles(lat []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*99/100]
}

// TestFiguresLargeResultBesideSmallCalls measures a gateway over two Go
// test servers, three rounds: 500 small calls to one (echo) while idle,
// then small calls while the other returns a 100 MiB result (cat); and the
// gateway's peak resident set. It asserts only what the calls return: the large result
// comes back bounded, each small one exact.
func TestFiguresLargeResultBesideSmallCalls(t *testing.T) {
	figures(t)
	const large = 100 << 20
	bin, server := buildFigureBinaries(t)
	gw := startGateway(t, bin, map[string]any{"big": map[string]any{"command": server}, "small": map[string]any{"command": server}})
	ctx := context.Background()
	small := func() time.Duration {
		start := time.Now()
		res, err := gw.cs.CallTool(ctx, &mcp.CallToolParams{Name: "small__echo", Arguments: map[string]any{"text": "ping"}})
		d := time.Since(start)
		if err != nil || res.IsError || text(res) != "ping" {
			t.Fatalf("small call: %v %+v", err, res)
		}
		return d
	}
	// Idle calls before each round, so that idle and busy calls see the
	// machine's load of the same minutes.
	var idle, busy, largeTook, largeCPU []time.Duration
	var idleRSS float64
	const rounds = 3
	for range rounds {
		idleCPU := gw.cpu(t)
		for range 500 {
			idle = append(idle, small())
		}
		perCall := (gw.cpu(t) - idleCPU) / 500
		if idleRSS == 0 {
			idleRSS = gw.peakRSS(t)
		}
		done := make(chan error, 1)
		cpuBefore, busyBefore := gw.cpu(t), len(busy)
		start := time.Now()
		go func() {
			res, err := gw.cs.CallTool(ctx, &mcp.CallToolParams{Name: "big__cat", Arguments: map[string]any{"size": large}})
			if err == nil && (res.IsError || !refRE.MatchString(text(res)) || len(text(res)) > 64<<10) {
				err = fmt.Errorf("the large result came back unbounded or failed: %d bytes, error %v", len(text(res)), res.IsError)
			}
			done <- err
		}()
		for waiting := true; waiting; {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				largeTook = append(largeTook, time.Since(start))
				// The gateway's CPU less what the small calls made
				// meanwhile cost at the idle rate.
				largeCPU = append(largeCPU, gw.cpu(t)-cpuBefore-time.Duration(len(busy)-busyBefore)*perCall)
				waiting = false
			default:
				busy = append(busy, small())
			}
		}
	}
	i50, i99 := quantiles(idle)
	b50, b99 := quantiles(busy)
	l50, _ := quantiles(largeTook)
	t.Logf("small calls idle: n=%d p50=%v p99=%v", len(idle), i50, i99)
	t.Logf("small calls during a %d MiB result: n=%d p50=%v p99=%v (p99 %.1f× idle)", large>>20, len(busy), b50, b99, float64(b99)/float64(i99))
	c50, _ := quantiles(largeCPU)
	t.Logf("the %d MiB call took (median of %d) %v, of the gateway's CPU about %v (its CPU meanwhile less the small calls' at the idle rate); gateway peak RSS %.0f MiB (%.0f MiB after the idle calls)",
		large>>20, rounds, l50, c50, gw.peakRSS(t), idleRSS)
}

// TestFiguresStartTime measures how long the gateway takes to answer
// initialize (every server started) over five servers, against over the
// slowest of them alone: the servers start in parallel. Three Go test
// servers and the npm everything and filesystem servers (Node.js).
func TestFiguresStartTime(t *testing.T) {
	figures(t)
	mods := os.Getenv("HYBRIDCTX_TEST_MCP_SERVERS") // .ci/mcp-servers.sh
	if mods == "" {
		t.Skip("HYBRIDCTX_TEST_MCP_SERVERS is not set (.ci/mcp-servers.sh prints it)")
	}
	bin, server := buildFigureBinaries(t)
	root := t.TempDir()
	node := func(pkg string, args ...string) map[string]any {
		return map[string]any{"command": "node", "args": append([]string{filepath.Join(mods, "@modelcontextprotocol", pkg, "dist", "index.js")}, args...)}
	}
	five := map[string]any{"go1": map[string]any{"command": server}, "go2": map[string]any{"command": server}, "go3": map[string]any{"command": server},
		"everything": node("server-everything", "stdio"), "fs": node("server-filesystem", root)}
	// The runs alternate between the configurations, so that a change in
	// the machine's load falls on all of them alike.
	configs := map[string]map[string]any{"all five": five}
	for name := range five {
		configs[name] = map[string]any{name: five[name]}
	}
	took := map[string][]time.Duration{}
	const runs = 7
	for range runs {
		for label, servers := range configs {
			start := time.Now()
			gw := startGateway(t, bin, servers)
			res, err := gw.cs.ListTools(context.Background(), nil)
			took[label] = append(took[label], time.Since(start))
			if err != nil {
				t.Fatal(err)
			}
			for name := range servers {
				if !slices.ContainsFunc(res.Tools, func(x *mcp.Tool) bool { return strings.HasPrefix(x.Name, name+"__") }) {
					t.Fatalf("no tool of %q listed: the gateway answered before it started", name)
				}
			}
			_ = gw.cs.Close()
		}
	}
	median := map[string]time.Duration{}
	var slowest string
	var sum time.Duration
	for label, d := range took {
		median[label], _ = quantiles(d)
		if label != "all five" {
			sum += median[label]
			if slowest == "" || median[label] > median[slowest] {
				slowest = label
			}
		}
	}
	t.Logf("gateway start to its tools listed (median of %d): all five %v; the slowest alone (%s) %v (%.2f×); the five alone one after another %v; every run %v",
		runs, median["all five"], slowest, median[slowest], float64(median["all five"])/float64(median[slowest]), sum, took)
}

// BenchmarkGatewayStart measures Start over five in-process servers that
// take 50, 100, 150, 200 and 250 ms to accept a connection (a sleep, not
// work: the gateway's own parallelism, apart from the machine's CPU),
// against the slowest of them alone.
func BenchmarkGatewayStart(b *testing.B) {
	delays := map[string]time.Duration{"s1": 50 * time.Millisecond, "s2": 100 * time.Millisecond, "s3": 150 * time.Millisecond,
		"s4": 200 * time.Millisecond, "s5": 250 * time.Millisecond}
	for _, bc := range []struct{ name, config string }{
		{"five", fiveServers},
		{"slowest", `{"mcpServers": {"s5": {"command": "x"}}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			store, err := backend.Open(context.Background(), "mem://", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			cfg, _ := Parse([]byte(bc.config), nil)
			bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, store)
			off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
			reh, _ := hybridctx.NewRehydrator(bind, nil)
			for b.Loop() {
				gw, err := New(cfg, off, reh, &Options{KeepAlive: -1, Transport: func(s *Server) (mcp.Transport, error) {
					time.Sleep(delays[s.Name])
					return (&goServer{name: s.Name}).transport()
				}})
				if err != nil {
					b.Fatal(err)
				}
				if err := gw.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				gw.mu.Lock()
				routed := len(gw.routes)
				gw.mu.Unlock()
				if want := 4 * len(cfg.Servers); routed != want { // big, write, writeb64, ask
					b.Fatalf("%d tools routed after Start, want %d: a server had not started", routed, want)
				}
				_ = gw.Close()
			}
		})
	}
}
