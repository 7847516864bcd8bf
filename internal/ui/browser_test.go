package ui_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/internal/cli"
)

// EnvScreenshots names the directory the browser test saves its screenshots
// in (docs/img in the repository); unset, none are taken.
const EnvScreenshots = "HYBRIDCTX_UI_SCREENSHOTS"

// lockedBuffer is a goroutine-safe output.
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

// workspaceFixture is a directory workspace holding one demo run (its
// events in an events file) and extra artifacts of the same owner: a text
// body with a needle, a JSON body and n small ones.
type workspaceFixture struct {
	dir, events     string
	flags           []string
	demoOut         string
	needle, jsonRef string
}

func newFixture(t *testing.T, n int) *workspaceFixture {
	t.Helper()
	dir := t.TempDir()
	f := &workspaceFixture{dir: filepath.Join(dir, "ws"), events: filepath.Join(dir, "events.jsonl")}
	f.flags = []string{"--workspace", f.dir, "--user", "ada", "--workflow", "triage", "--session", "s1", "--events", f.events}
	var out, errb bytes.Buffer
	if code := cli.Main(context.Background(), append(append([]string{}, f.flags...), "demo"), cli.Env{Stdout: &out, Stderr: &errb}); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errb.String())
	}
	f.demoOut = out.String()

	ctx := context.Background()
	store, err := backend.Open(ctx, f.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	b, err := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, store)
	if err != nil {
		t.Fatal(err)
	}
	off, err := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 64}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i := 1; i <= 20000; i++ {
		if i == 7777 {
			text.WriteString("2026-01-02 ERROR the needle: disk quota exceeded on /var/cache\n")
			continue
		}
		fmt.Fprintf(&text, "2026-01-02 INFO step %d went fine\n", i)
	}
	res, err := off.Offload(ctx, hybridctx.Call{Tool: "needle_log", ID: "n"}, text.String())
	if err != nil {
		t.Fatal(err)
	}
	f.needle = res.Diagnostics().Reference().Hex()
	var js strings.Builder
	js.WriteString(`{"service":"checkout","items":[`)
	for i := 1; i <= 500; i++ {
		if i > 1 {
			js.WriteString(",")
		}
		name := fmt.Sprintf("item-%d", i)
		if i == 3 {
			name = "three"
		}
		fmt.Fprintf(&js, `{"id":%d,"name":%q,"ok":%t}`, i, name, i%7 != 0)
	}
	js.WriteString(`],"total":500}`)
	if res, err = off.Offload(ctx, hybridctx.Call{Tool: "orders_json", ID: "j"}, js.String()); err != nil {
		t.Fatal(err)
	}
	f.jsonRef = res.Diagnostics().Reference().Hex()
	bulk(t, off, n, nil)
	return f
}

// bulk offloads n distinct results from 8 goroutines (a directory
// workspace commits concurrent offloads together), reporting to ctx's
// reporter when rep is set.
func bulk(t *testing.T, off *hybridctx.Offloader, n int, rep hybridctx.Reporter) {
	t.Helper()
	ctx := context.Background()
	if rep != nil {
		ctx = hybridctx.WithReporter(ctx, rep)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if _, err := off.Offload(ctx, hybridctx.Call{Tool: "bulk", ID: fmt.Sprint(i)}, fmt.Sprintf("bulk artifact %06d %s", i, strings.Repeat("·", 40+i%500))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// serve runs `hybridctx ui` over the fixture until the test ends and
// returns the URL it printed.
func (f *workspaceFixture) serve(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, append(append([]string{}, f.flags...), "ui", "--listen", "127.0.0.1:0"), cli.Env{Stdout: out, Stderr: out})
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("ui exited %d: %s", code, out.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if s, ok := strings.CutSuffix(out.String(), "\n"); ok && strings.HasPrefix(s, "http://") {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("ui printed no URL: %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBrowser drives the page in headless Chromium as a person would: the
// demo run's figures as the CLI printed them, an artifact opened, searched
// (the needle line highlighted) and queried with jq, thousands of
// artifacts paged. With HYBRIDCTX_UI_SCREENSHOTS=dir it saves the three
// main screens there.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: not in -short")
	}
	if findChromium() == "" {
		t.Skip("no chromium installed (apt-get install chromium, or set HYBRIDCTX_CHROMIUM)")
	}
	f := newFixture(t, 2500)
	base := f.serve(t)
	b := launch(t)
	shots := os.Getenv(EnvScreenshots)

	// Runs: the demo's run, with the summary lines the demo printed.
	b.navigate(base + "#/runs")
	b.waitFor(`document.querySelector("#runs a")`)
	b.click("#runs a")
	b.waitFor(`document.querySelector("#summary")`)
	summary := b.text("#summary")
	for _, line := range strings.Split(f.demoOut, "\n") {
		if regexp.MustCompile(`^(offload|rehydration|bytes|compaction) `).MatchString(line) && !strings.Contains(summary, line) {
			t.Errorf("the page's summary lacks the CLI's line %q; it shows:\n%s", line, summary)
		}
	}
	kept := regexp.MustCompile(`bytes +([0-9,]+) kept out of context, ([0-9,]+) rehydrated`).FindStringSubmatch(f.demoOut)
	if kept == nil || !strings.Contains(summary, kept[1]) {
		t.Fatalf("demo output %q", f.demoOut)
	}
	sentence := b.text("#sentence")
	if !regexp.MustCompile(`^kept [0-9.]+ [KMG]?B out; the model read [0-9.]+ (bytes|KB) back$`).MatchString(sentence) ||
		!strings.Contains(sentence, strings.ReplaceAll(kept[2], ",", "")) {
		t.Errorf("sentence %q (rehydrated %s)", sentence, kept[2])
	}
	var polyline int
	b.eval(`document.querySelectorAll("#chart polyline").length`, &polyline)
	if polyline != 2 || !strings.Contains(b.text("#agents"), "researcher") {
		t.Errorf("chart lines %d, agents %q", polyline, b.text("#agents"))
	}
	// The demo's root agent compacts once, masking two results: its step,
	// from its event, with sizes before and after, in the steps table, on
	// the chart (marked as invalidating the cached prefix) and in the
	// timeline between the decisions.
	compaction := regexp.MustCompile(`compaction +1 step masked ([0-9]+) tool results to references, ([0-9,]+) bytes out`).FindStringSubmatch(f.demoOut)
	if compaction == nil {
		t.Fatalf("demo output %q", f.demoOut)
	}
	var steps [][]string
	b.eval(`[...document.querySelectorAll("#steps tr")].slice(1).map(tr => [...tr.querySelectorAll("td")].map(td => td.innerText))`, &steps)
	if len(steps) != 1 || len(steps[0]) != 8 || steps[0][1] != "hybridctx" || steps[0][4] != compaction[1] || steps[0][5] != "0" ||
		steps[0][6] != "invalidated" || steps[0][7] != "within budget" || !strings.Contains(steps[0][2], "tokens") || b.text("#steps-approx") != "" {
		t.Errorf("steps table %q (demo: %q)", steps, compaction[0])
	}
	var marks, invalidating int
	b.eval(`document.querySelectorAll("#chart line.step").length`, &marks)
	b.eval(`document.querySelectorAll("#chart line.step.invalidates").length`, &invalidating)
	if marks != 1 || invalidating != 1 {
		t.Errorf("chart marks %d, invalidating %d", marks, invalidating)
	}
	b.waitFor(`document.querySelector("#tl-info")`)
	var stepRows []string
	b.eval(`[...document.querySelectorAll("#timeline tr.step.invalidates")].map(tr => tr.innerText)`, &stepRows)
	if len(stepRows) != 1 || !strings.Contains(stepRows[0], compaction[1]+" results and 0 inputs masked, cached prefix invalidated, within budget") {
		t.Errorf("timeline step rows %q", stepRows)
	}
	b.eval(`(() => { const s = document.querySelector("#tl-outcome"); s.value = "resolved"; s.dispatchEvent(new Event("change")); })()`, nil)
	resolved := regexp.MustCompile(`rehydration +resolved ([0-9]+)`).FindStringSubmatch(f.demoOut)
	if resolved == nil {
		t.Fatalf("demo output %q", f.demoOut)
	}
	b.waitFor(fmt.Sprintf(`document.querySelector("#tl-info").innerText === "1–%[1]s of %[1]s"`, resolved[1]))
	if shots != "" {
		b.screenshot(shots, "ui-run.png")
	}

	// Artifacts: thousands, paged and sorted.
	b.navigate(base + "#/artifacts")
	b.waitFor(`document.querySelector("#art-info")`)
	if info := b.text("#art-info"); !regexp.MustCompile(`^1–100 of 2,50[0-9]$`).MatchString(info) {
		t.Fatalf("first page: %q", info)
	}
	for _, want := range []string{"101–200", "201–300"} {
		b.click("#art-next")
		b.waitFor(fmt.Sprintf(`document.querySelector("#art-info").innerText.startsWith(%q)`, want))
	}
	b.click(`th[data-sort="size"]`)
	b.waitFor(`document.querySelector("#art-info").innerText.startsWith("1–100") && document.querySelector('th[data-sort="size"]').innerText.includes("▼")`)
	var sizes []string
	b.eval(`[...document.querySelectorAll("#artifacts-table tr td:nth-child(2)")].slice(0, 2).map(td => td.innerText)`, &sizes)
	if len(sizes) != 2 || len(sizes[0]) < len(sizes[1]) {
		t.Errorf("sorted by size, largest first: %v", sizes)
	}
	b.fill("#filter", "needle_log")
	b.waitFor(`document.querySelector("#art-info").innerText === "1–1 of 1"`)
	if shots != "" {
		b.fill("#filter", "")
		b.waitFor(`document.querySelector("#art-info").innerText.endsWith("of 2,504") || document.querySelector("#art-info").innerText.match(/of 2,5/)`)
		b.screenshot(shots, "ui-artifacts.png")
		b.fill("#filter", "needle_log")
		b.waitFor(`document.querySelector("#art-info").innerText === "1–1 of 1"`)
	}

	// The reader: lines, then a search whose needle line is highlighted.
	b.click("#artifacts-table a")
	b.waitFor(`document.querySelector("#lines")`)
	if got := b.text("#outcome"); got != "resolved" {
		t.Fatalf("lines outcome %q", got)
	}
	var first string
	b.eval(`document.querySelector("#lines .ln").innerText + " " + document.querySelector("#lines pre").innerText`, &first)
	if first != "1 2026-01-02 INFO step 1 went fine" {
		t.Errorf("first line %q", first)
	}
	b.click(`.tabs button[data-t="search"]`)
	b.waitFor(`document.querySelector("#pattern")`)
	b.fill("#pattern", "NEEDLE")
	b.click("#icase")
	b.click("#search-form button")
	b.waitFor(`document.querySelector("#matches mark")`)
	var hit struct {
		Line, Mark, Summary string
	}
	b.eval(`({line: document.querySelector("#matches .ln.hit").innerText, mark: document.querySelector("#matches mark").innerText, summary: document.querySelector("#page-summary").innerText})`, &hit)
	var rows int
	b.eval(`document.querySelectorAll("#matches pre").length`, &rows)
	if hit.Line != "7777" || hit.Mark != "needle" || !strings.HasPrefix(hit.Summary, "1 match") || rows != 5 {
		t.Errorf("search: %+v, %d rows (the match and 2 lines of context either side)", hit, rows)
	}
	if shots != "" {
		b.screenshot(shots, "ui-reader.png")
	}

	// jq over the JSON artifact, its shape shown first.
	b.navigate(base + "#/artifacts/" + f.jsonRef)
	b.waitFor(`document.querySelector("#lines")`)
	b.click(`.tabs button[data-t="query"]`)
	b.waitFor(`document.querySelector("#shape") && document.querySelector("#shape").innerText.includes("items")`)
	if shape := b.text("#shape"); !strings.Contains(shape, `"name": "string"`) || !strings.Contains(shape, `"total": "number"`) {
		t.Errorf("shape %q", shape)
	}
	b.fill("#filter-q", `.items[] | select(.id == 3) | .name`)
	b.click("#query-form button")
	b.waitFor(`document.querySelector("#results")`)
	if got := b.text("#results"); strings.TrimSpace(got) != `"three"` {
		t.Errorf("jq result %q", got)
	}

	// A body gone from the workspace: the reader says so, categorically.
	if err := os.Remove(filepath.Join(f.dir, "sha256", f.jsonRef)); err != nil {
		t.Fatal(err)
	}
	b.navigate(base + "#/runs")
	b.waitFor(`document.querySelector("#runs")`)
	b.navigate(base + "#/artifacts/" + f.jsonRef)
	b.waitFor(`document.querySelector("#refused")`)
	if got := b.text("#outcome") + "/" + b.text("#reason"); got != "missing/body_missing" || !strings.Contains(b.text("#refused"), "gone") {
		t.Errorf("a missing body shows %q: %q", got, b.text("#refused"))
	}

	// Every read the page made is an event in the events file.
	ev, err := os.ReadFile(f.events)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(ev, []byte(`"rehydration_decision"`)); n < 3+5 { // the demo's 3; the page's lines, search, shape, query, missing
		t.Errorf("%d rehydration events in the events file", n)
	}
}
