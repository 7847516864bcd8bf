package benchcli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/internal/cli"
	"github.com/hybridctx/hybridctx/internal/workload"
)

// benchOut decodes bench's output.
func benchOut(t *testing.T, r result) benchJSON {
	t.Helper()
	var out benchJSON
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&out); err != nil || dec.More() || out.Report == nil {
		t.Fatalf("bench output is not one report: %v\n%.400q", err, r.stdout)
	}
	return out
}

func TestBenchTemporaryWorkspace(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the temporary workspace goes
	r := run(t, "--count", "40", "--seed", "3")
	wantCode(t, r, cli.ExitOK)
	out := benchOut(t, r)
	switch {
	case out.Workload.Source != "generated" || *out.Workload.Seed != 3 || *out.Workload.Count != 40:
		t.Errorf("workload %+v", out.Workload)
	case out.Workspace.Kind != "temporary directory" || out.Workspace.DiskBytes == nil || *out.Workspace.DiskBytes < out.Storage.StoredBytes:
		t.Errorf("workspace %+v, stored %d", out.Workspace, out.Storage.StoredBytes)
	case out.Results != 40 || out.Sessions != 2 || out.Threshold != 4096 || !out.RoundTrip.OK:
		t.Errorf("report %+v", out.Report)
	case out.History.Ratio > 0.10:
		t.Errorf("history ratio %.3f over docs/figures.md's 10%%", out.History.Ratio)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the temporary workspace was left behind: %v", left)
	}
}

func TestBenchGivenWorkspaceAndReplay(t *testing.T) {
	ws := newWorkspace(t)
	file := filepath.Join(t.TempDir(), "w.jsonl")
	wantCode(t, run(t, "--count", "25", "--seed", "9", "--emit-workload", file), cli.ExitOK)
	generated := run(t, "--count", "25", "--seed", "9", "--threshold", "2048", "--workspace", "mem://")
	wantCode(t, generated, cli.ExitOK)
	replayed := run(t, "--workload", file, "--threshold", "2048", "--workspace", ws, "--user", "u", "--workflow", "w")
	wantCode(t, replayed, cli.ExitOK)
	g, rp := benchOut(t, generated), benchOut(t, replayed)
	if g.Workspace.Kind != "mem" || g.Workspace.DiskBytes != nil || rp.Workspace.Kind != "dir" || rp.Workspace.DiskBytes == nil {
		t.Errorf("workspaces: %+v, %+v", g.Workspace, rp.Workspace)
	}
	if rp.Workload.Source != "file" || rp.Workload.Seed != nil {
		t.Errorf("replayed workload %+v", rp.Workload)
	}
	for k, v := range g.Decisions {
		if rp.Decisions[k] != v {
			t.Fatalf("replay decided %v, the generated run %v", rp.Decisions, g.Decisions)
		}
	}
	if rp.ResultBytes != g.ResultBytes || rp.History.Bytes != g.History.Bytes || rp.Storage != g.Storage {
		t.Errorf("replay differs: %+v vs %+v", rp.Report, g.Report)
	}
	// The bodies stay in the given workspace, under the given owner.
	store, err := backend.Open(context.Background(), ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	n := 0
	for _, err := range store.ListBodies(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != rp.Storage.UniqueBodies || n == 0 {
		t.Errorf("%d bodies in the workspace, the report says %d", n, rp.Storage.UniqueBodies)
	}
}

func TestBenchStandardStreams(t *testing.T) {
	emitted := run(t, "--count", "5", "--emit-workload", "-")
	wantCode(t, emitted, cli.ExitOK)
	if strings.Count(emitted.stdout, "\n") != 5 {
		t.Fatalf("--emit-workload - wrote %q", emitted.stdout)
	}
	r := withInput(t, []byte(emitted.stdout), "--workload", "-", "--workspace", "mem://")
	wantCode(t, r, cli.ExitOK)
	if out := benchOut(t, r); out.Results != 5 {
		t.Fatalf("replayed %d results from standard input", out.Results)
	}
}

func TestBenchEvents(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events.jsonl")
	r := run(t, "--count", "30", "--workspace", "mem://", "--events", events, "--run-id", "bench-run")
	wantCode(t, r, cli.ExitOK)
	out := benchOut(t, r)
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	stored := out.Decisions["offloaded"] + out.Decisions["existing_reference"]
	// Every result's decision, and per body a session stored a ranged read
	// (with its recovered segment inlined) and a whole read.
	if want := out.Results + 3*out.Rehydration.Whole.Count; stored == 0 || len(lines) != want {
		t.Fatalf("%d events, want %d", len(lines), want)
	}
	for _, l := range lines {
		if !strings.Contains(l, `"run_id":"bench-run"`) {
			t.Fatalf("event without the run id: %s", l)
		}
	}
}

func TestBenchUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"session":"s","tool":"t","content":"ok"}`+"\n"+`{"session":"s"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args      []string
		fragments []string
	}{
		{[]string{"--threshold", "0"}, []string{"--threshold"}},
		{[]string{"--threshold", "99999999999"}, []string{"--threshold"}},
		{[]string{"--count", "0"}, []string{"--count"}},
		{[]string{"--workload", bad, "--emit-workload", "x"}, []string{"exclude"}},
		{[]string{"--workload", bad, "--seed", "2"}, []string{"--seed"}},
		{[]string{"--session", "s"}, []string{"--session"}},
		{[]string{"--workload", filepath.Join(dir, "absent")}, []string{"cannot read the workload"}},
		{[]string{"--workload", bad, "--workspace", "mem://"}, []string{"line 2", "session and tool are required"}},
		{[]string{"--emit-workload", filepath.Join(dir, "no", "such", "dir")}, []string{"cannot create"}},
		{[]string{"--workspace", "file://host/x"}, []string{"--workspace"}},
	}
	for _, tc := range cases {
		r := run(t, tc.args...)
		if r.code != cli.ExitUsage {
			t.Errorf("bench %v: exit %d, want %d (stderr %q)", tc.args, r.code, cli.ExitUsage, r.stderr)
			continue
		}
		wantOneErrorLine(t, r, tc.fragments...)
	}
}

func TestBenchEmittedWorkloadParses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "w.jsonl")
	wantCode(t, run(t, "--count", "12", "--emit-workload", file), cli.ExitOK)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := workload.NewReader(f, nil)
	for i := range 12 {
		if _, err := r.Next(); err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
	}
}

func TestBenchQuestions(t *testing.T) {
	r := run(t, "--questions", "--count", "60", "--workspace", "mem://")
	wantCode(t, r, cli.ExitOK)
	var v struct {
		Questions struct {
			Questions int `json:"questions"`
			Tools     struct {
				Calls struct{ P95 int64 } `json:"calls"`
				Bytes struct{ P95 int64 } `json:"bytes"`
				Exact float64             `json:"exact_percent"`
			} `json:"targeted_tools"`
			Pages struct {
				Exact float64 `json:"exact_percent"`
			} `json:"byte_pages"`
			Led struct {
				Calls struct{ P95 int64 } `json:"calls"`
				Bytes struct{ P95 int64 } `json:"bytes"`
				Exact float64             `json:"exact_percent"`
			} `json:"notice_led"`
		} `json:"questions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Questions.Questions == 0 || v.Questions.Tools.Exact != 100 ||
		v.Questions.Tools.Calls.P95 > 2 || v.Questions.Tools.Bytes.P95 > 4096 || v.Questions.Pages.Exact != 100 ||
		v.Questions.Led.Exact != 100 || v.Questions.Led.Calls.P95 > 2 || v.Questions.Led.Bytes.P95 > 4096 {
		t.Fatalf("%v %s", err, r.stdout)
	}
	wantCode(t, withInput(t, []byte(""), "--questions", "--workload", "-"), cli.ExitUsage)
}

// TestBenchSharesTheCLIPlumbing: hybridctx-bench answers as hybridctx
// does, through internal/cli's Program API: its help lists its own rows of
// the one exit table, and with --json a usage error (before or after the
// bad flag) also prints the {"error"} object.
func TestBenchSharesTheCLIPlumbing(t *testing.T) {
	help := run(t, "--help")
	wantCode(t, help, cli.ExitOK)
	for _, code := range []int{0, 1, 2, 130, 143} {
		if !strings.Contains(help.stdout, fmt.Sprintf("\n  %2d  ", code)) {
			t.Errorf("help does not list exit %d", code)
		}
	}
	for _, code := range []int{3, 5, 10} {
		if strings.Contains(help.stdout, fmt.Sprintf("\n  %2d  ", code)) {
			t.Errorf("help lists exit %d, which bench cannot return", code)
		}
	}
	for _, args := range [][]string{{"--json", "--count", "x"}, {"--count", "x", "--json"}, {"--json", "--count", "0"}} {
		r := run(t, args...)
		wantCode(t, r, cli.ExitUsage)
		var v struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Error.Code != "usage" || !strings.Contains(v.Error.Message, "--count") {
			t.Errorf("%v: stdout %q (%v)", args, r.stdout, err)
		}
		if !strings.HasPrefix(r.stderr, Name+": --count") {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
}
