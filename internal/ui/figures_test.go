package ui_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/internal/procstat"
	"github.com/hybridctx/hybridctx/sink"
)

// TestUIFigures measures, with HYBRIDCTX_UI_FIGURES=1, the page for a run of
// 10,000 decisions over a workspace of 10,000 artifacts: each API answer's
// time, the browser's first paint and the time until the run and the
// artifacts are on screen, and the resident memory of the hybridctx ui
// process serving them. It logs the figures; it asserts no time.
func TestUIFigures(t *testing.T) {
	if os.Getenv("HYBRIDCTX_UI_FIGURES") == "" {
		t.Skip("figures: set HYBRIDCTX_UI_FIGURES=1")
	}
	if findChromium() == "" {
		t.Skip("no chromium installed (apt-get install chromium, or set HYBRIDCTX_CHROMIUM)")
	}
	const n = 10000
	dir := t.TempDir()
	ws, events := filepath.Join(dir, "ws"), filepath.Join(dir, "events.jsonl")
	ctx := context.Background()
	store, err := backend.Open(ctx, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, store)
	if err != nil {
		t.Fatal(err)
	}
	off, err := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 64}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := os.OpenFile(events, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	rep := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "figures", AgentID: "root", Sinks: []hybridctx.Sink{sink.NewJSONLines(ev)}})
	start := time.Now()
	bulk(t, off, n, rep)
	ev.Close()
	store.Close()
	t.Logf("fixture: %d offloads in %v", n, time.Since(start).Round(time.Millisecond))
	if st, err := os.Stat(events); err == nil {
		t.Logf("events file: %d bytes", st.Size())
	}

	bin := filepath.Join(dir, "hybridctx")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/hybridctx").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--workspace", ws, "--user", "ada", "--workflow", "triage", "--session", "s1", "--events", events,
		"ui", "--listen", "127.0.0.1:0")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	base, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base = strings.TrimSpace(base)
	t.Logf("rss at start: %s", rss(t, cmd.Process.Pid))

	for _, path := range []string{"/api/runs", "/api/runs", "/api/runs/figures", "/api/runs/figures/decisions?offset=9900",
		"/api/artifacts", "/api/artifacts", "/api/artifacts?sort=size&order=asc&offset=9900"} {
		s := time.Now()
		resp, err := http.Get(base + strings.TrimPrefix(path, "/"))
		if err != nil {
			t.Fatal(err)
		}
		nb, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t.Logf("GET %-48s %d  %7d bytes  %v", path, resp.StatusCode, nb, time.Since(s).Round(100*time.Microsecond))
	}

	br := launch(t)
	for _, page := range []struct{ hash, ready string }{{"#/runs/figures", "#summary"}, {"#/artifacts", "#art-info"}} {
		br.navigate("about:blank")
		br.waitFor(`location.href === "about:blank"`)
		br.navigate(base + page.hash)
		br.waitFor(`location.href.startsWith("http")`)
		var shown float64
		br.eval(fmt.Sprintf(`new Promise(r => { const f = () => document.querySelector(%q) ? r(performance.now()) : requestAnimationFrame(f); f(); })`, page.ready), &shown)
		var fcp float64
		br.eval(`(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime`, &fcp)
		t.Logf("page %-16s first contentful paint %6.0f ms, %s on screen at %6.0f ms", page.hash, fcp, page.ready, shown)
	}
	t.Logf("rss after serving: %s", rss(t, cmd.Process.Pid))
}

// rss returns a process's VmRSS and VmHWM, for the log.
func rss(t *testing.T, pid int) string {
	now, err1 := procstat.Bytes(pid, "VmRSS")
	peak, err2 := procstat.Bytes(pid, "VmHWM")
	if err := errors.Join(err1, err2); err != nil {
		return "unknown"
	}
	return fmt.Sprintf("VmRSS %d MiB, VmHWM %d MiB", now>>20, peak>>20)
}
