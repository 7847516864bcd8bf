package benchcli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/internal/cli"
	"github.com/hybridctx/hybridctx/internal/workload"
)

func TestBenchHistory(t *testing.T) {
	skipUnlessLong(t)
	r := run(t, "--history", "--count", "120", "--turns", "80", "--history-budget", "8192", "--low-water", "4096",
		"--keep-recent", "2", "--workspace", "mem://")
	wantCode(t, r, cli.ExitOK)
	var out benchHistoryJSON
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&out); err != nil || dec.More() || out.History == nil {
		t.Fatalf("bench --history output: %v\n%.400q", err, r.stdout)
	}
	h := out.History
	names := []string{workload.StrategyInline, workload.StrategyOffload, workload.StrategyMaskEveryTurn,
		workload.StrategyWatermark, workload.StrategyKeepLastK, workload.StrategyClearTrigger}
	if h.Turns != 80 || len(h.Strategies) != len(names) {
		t.Fatalf("report %+v", h)
	}
	by := map[string]*workload.BudgetStrategy{}
	for i, s := range h.Strategies {
		if s.Name != names[i] {
			t.Fatalf("strategy %d is %q, want %q", i, s.Name, names[i])
		}
		by[s.Name] = s
	}
	w, off, inl := by[workload.StrategyWatermark], by[workload.StrategyOffload], by[workload.StrategyInline]
	switch {
	case w.Masked == 0 || w.ReadBackExact != w.Masked || w.Questions.Count == 0 || w.Questions.Exact != w.Questions.Count:
		t.Errorf("watermark %+v", w)
	case w.PeakToolBytes >= off.PeakToolBytes || off.PeakBytes >= inl.PeakBytes || w.CacheWeighted >= off.CacheWeighted:
		t.Errorf("watermark %+v, offload %+v", w, off)
	case by[workload.StrategyKeepLastK].Lossless || by[workload.StrategyKeepLastK].ReadBackExact != 0:
		t.Errorf("keep_last_k %+v", by[workload.StrategyKeepLastK])
	case off.Invalidations != 0 || off.Masked != 0:
		t.Errorf("offload %+v", off)
	}
	// In tokens, with the estimate (the exact encodings are tested in
	// package bpe).
	r = run(t, "--history", "--count", "40", "--turns", "30", "--history-budget", "1000", "--low-water", "500",
		"--tokenizer", "bytes/4", "--workspace", "mem://")
	wantCode(t, r, cli.ExitOK)
	if !strings.Contains(r.stdout, `"tokenizer":"bytes/4"`) || !strings.Contains(r.stdout, `"peak_tokens":`) {
		t.Errorf("tokens: %.300s", r.stdout)
	}
	// --keep-recent 0 keeps none: keep_last_k clears every result and
	// clear_at_trigger may clear up to the last one.
	r = run(t, "--history", "--count", "20", "--turns", "20", "--history-budget", "1000", "--low-water", "500",
		"--keep-recent", "0", "--workspace", "mem://")
	wantCode(t, r, cli.ExitOK)
}

func TestBenchHistoryUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		fragment string
	}{
		{[]string{"--history", "--turns", "0"}, "--turns"},
		{[]string{"--history", "--history-budget", "0"}, "--history-budget"},
		{[]string{"--history", "--history-budget", "10", "--low-water", "11"}, "--low-water"},
		{[]string{"--history", "--keep-recent", "-1"}, "--keep-recent"},
		{[]string{"--history", "--questions"}, "--questions"},
		{[]string{"--turns", "5"}, "--turns applies to --history only"},
		{[]string{"--turns", "0"}, "--turns applies to --history only"},
		{[]string{"--questions", "--keep-recent", "1"}, "--keep-recent applies to --history only"},
		{[]string{"--history", "--tokenizer", "p50k_base"}, "--tokenizer"},
		{[]string{"--markdown"}, "--markdown applies to --history only"},
	} {
		r := run(t, tc.args...)
		if r.code != cli.ExitUsage {
			t.Errorf("bench %v: exit %d (stderr %q)", tc.args, r.code, r.stderr)
			continue
		}
		wantOneErrorLine(t, r, tc.fragment)
	}
}

// trajectoryFile writes n small recorded runs in the replay format
// (docs/history.md, "Real runs"), gzipped when zip is set, and returns the
// file's path.
func trajectoryFile(t *testing.T, n int, zip bool) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		var turns []string
		for k := range 10 + i {
			out := strings.Repeat(fmt.Sprintf("output %d of run %d\n", k, i), 40*(k%4+1))
			q, _ := json.Marshal(out)
			turns = append(turns, fmt.Sprintf(`{"tool":"bash","call_id":"c%d","output":%s,"pre_bytes":%d,"assistant_bytes":300,"calls":1}`, k, q, k*10))
		}
		fmt.Fprintf(&b, `{"set":"t","id":"%d","prompt_bytes":3000,"turns":[%s],"final_calls":1}`+"\n", i, strings.Join(turns, ","))
	}
	data := []byte(b.String())
	name := "runs.jsonl"
	if zip {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, _ = zw.Write(data)
		_ = zw.Close()
		data, name = z.Bytes(), "runs.jsonl.gz"
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBenchTrajectories(t *testing.T) {
	plain, zipped := trajectoryFile(t, 3, false), trajectoryFile(t, 4, true)
	r := run(t, "--history", "--trajectories", plain+","+zipped, "--history-budget", "6000", "--low-water", "3000",
		"--threshold", "1024", "--workspace", "mem://")
	wantCode(t, r, cli.ExitOK)
	var out benchHistoryJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.RealRuns == nil || out.History != nil {
		t.Fatalf("output: %v\n%.400q", err, r.stdout)
	}
	rr := out.RealRuns
	if rr.Trajectories != 7 || len(rr.Strategies) != 6 || rr.Budget != 6000 || rr.Threshold != 1024 {
		t.Fatalf("report %+v", rr)
	}
	w := rr.Strategies[3]
	if w.Name != workload.StrategyWatermark || w.Acted == 0 || w.Masked == 0 || w.ReadBackExact != w.Masked {
		t.Errorf("watermark %+v", w)
	}
	for _, tc := range []struct {
		args     []string
		code     int
		fragment string
	}{
		{[]string{"--trajectories", plain}, cli.ExitUsage, "--trajectories applies to --history only"},
		{[]string{"--history", "--trajectories", plain, "--turns", "5"}, cli.ExitUsage, "do not apply"},
		{[]string{"--history", "--trajectories", plain, "--workload", plain}, cli.ExitUsage, "do not apply"},
		{[]string{"--history", "--trajectories", plain + ",,"}, cli.ExitUsage, "separated by commas"},
		{[]string{"--history", "--trajectories", "-"}, cli.ExitUsage, "not standard input"},
		{[]string{"--history", "--trajectories", filepath.Join(t.TempDir(), "none.jsonl")}, cli.ExitUsage, "cannot read the file"},
		{[]string{"--history", "--trajectories", writeFile(t, "bad.jsonl", "{\"prompt_bytes\":1,\"turns\":[]}\n{\"turns\":1}\n")}, cli.ExitUsage, "line 2"},
		{[]string{"--history", "--trajectories", writeFile(t, "empty.jsonl", "\n")}, cli.ExitUsage, "no recorded run"},
	} {
		r := run(t, append([]string{"--workspace", "mem://"}, tc.args...)...)
		if r.code != tc.code {
			t.Errorf("bench %v: exit %d (stderr %q)", tc.args, r.code, r.stderr)
			continue
		}
		wantOneErrorLine(t, r, tc.fragment)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBenchHistoryMarkdown: --markdown prints the two tables of the pages,
// headed as workload's generator heads them, in place of the JSON object,
// for a synthetic session and for recorded runs.
func TestBenchHistoryMarkdown(t *testing.T) {
	r := run(t, "--history", "--markdown", "--count", "40", "--turns", "30", "--history-budget", "1000", "--low-water", "500",
		"--keep-recent", "2", "--workspace", "mem://")
	wantCode(t, r, cli.ExitOK)
	summary, detail, ok := strings.Cut(r.stdout, "\n\n")
	if !ok || strings.HasPrefix(r.stdout, "{") {
		t.Fatalf("not two tables:\n%s", r.stdout)
	}
	wantTable(t, summary, workload.SummaryHeader, 6)
	wantTable(t, detail, workload.DetailHeader, 6)
	if !strings.Contains(summary, "| keep the last 2 (lossy) |") {
		t.Errorf("keep_last_k's label does not say --keep-recent:\n%s", summary)
	}

	file := trajectoryFile(t, 3, false)
	r = run(t, "--history", "--markdown", "--trajectories", file, "--history-budget", "6000", "--low-water", "3000",
		"--threshold", "1024", "--workspace", "mem://")
	wantCode(t, r, cli.ExitOK)
	summary, detail, ok = strings.Cut(r.stdout, "\n\n")
	if !ok {
		t.Fatalf("not two tables:\n%s", r.stdout)
	}
	wantTable(t, summary, workload.RealSummaryHeader, 1)
	wantTable(t, detail, workload.RealDetailHeader, 6)
	if !strings.HasPrefix(strings.Split(detail, "\n")[2], "| 1 KiB, 6,000 bytes | inline |") {
		t.Errorf("the first row does not name the configuration:\n%s", detail)
	}
}

// wantTable checks that table is a Markdown table under header with rows
// rows of as many cells.
func wantTable(t *testing.T, table string, header []string, rows int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) != rows+2 || lines[0] != "| "+strings.Join(header, " | ")+" |" {
		t.Fatalf("table of %d lines, want %d under %q:\n%s", len(lines), rows+2, header, table)
	}
	for _, l := range lines[2:] {
		if n := strings.Count(l, " | ") + 1; n != len(header) || !strings.HasPrefix(l, "| ") || !strings.HasSuffix(l, " |") {
			t.Errorf("row of %d cells, want %d: %q", n, len(header), l)
		}
	}
}

// The synthetic session's tables in README.md and BENCHMARKS.md are what
// the bench prints now, number for number: the run is deterministic (its
// seeded workload, mem://), so a change that moves a figure must print the
// tables again (hybridctx-bench --history --workspace mem:// --markdown).
func TestDocsHistoryFigures(t *testing.T) {
	skipUnlessLong(t)
	r := run(t, "--history", "--workspace", "mem://", "--markdown")
	wantCode(t, r, cli.ExitOK)
	tables := strings.Split(strings.TrimSpace(r.stdout), "\n\n")
	if len(tables) != 2 {
		t.Fatalf("--markdown printed %d tables, want 2:\n%s", len(tables), r.stdout)
	}
	for i, page := range []string{"README.md", "BENCHMARKS.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", page))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "\n"+tables[i]+"\n") {
			t.Errorf("%s does not hold the synthetic session's table as the bench prints it now:\n%s", page, tables[i])
		}
	}
}
