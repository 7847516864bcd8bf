package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/sink"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

func TestDemoText(t *testing.T) {
	ws := newWorkspace(t)
	r := run(t, "demo", "--workspace", ws)
	wantCode(t, r, ExitOK)
	if r.stderr != "" {
		t.Fatalf("stderr on a pipe: %q", r.stderr)
	}
	for _, want := range []string{
		"hybridctx    tool [offloaded]          artifact://sha256/",
		"search_artifact {\"context_lines\":1,\"pattern\":\"error\"",
		"hybridctx    tool [recovered]          19997:[ld] error: linker command failed",
		"read_artifact {\"line_count\":9,",
		"hybridctx    tool [existing_reference] artifact://sha256/",
		"researcher-1 tool [offloaded]",
		"query_artifact {\"filter\":\".[] | select(.failures > 0) | {name, failure}\"",
		"2 agents, 13 model turns, 11 tool calls",
		"offload      inline 8, offloaded 4, existing_reference 1\n",
		"hybridctx    tool [masked]             artifact://sha256/",
		"compaction   1 step masked 2 tool results to references",
		"rehydration  resolved 3\n",
		"975 rehydrated",
		"invariant    ok",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	m := regexp.MustCompile(`history +([0-9,]+) bytes with offload, ([0-9,]+) without`).FindStringSubmatch(r.stdout)
	if m == nil || len(m[1]) >= len(m[2])-2 {
		t.Fatalf("history line: %v\n%s", m, r.stdout)
	}

	// The owner defaulted to demo/demo and a random session.
	store, err := backend.Open(context.Background(), ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	n := 0
	for rec, err := range store.ListRecords(context.Background(), driver.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Owner.User != "demo" || rec.Owner.Workflow != "demo" || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(rec.Owner.Session) {
			t.Fatalf("owner %q/%q/%q", rec.Owner.User, rec.Owner.Workflow, rec.Owner.Session)
		}
		n++
	}
	if n != 4 {
		t.Fatalf("%d records, want the log, the report and the two masked short logs", n)
	}
}

// demoOut is the part of demo --json the tests read.
type demoOut struct {
	RunID     string `json:"run_id"`
	Final     string `json:"final"`
	Turns     int    `json:"turns"`
	ToolCalls int    `json:"tool_calls"`
	History   struct {
		Bytes          int64 `json:"bytes"`
		WithoutOffload int64 `json:"without_offload"`
	} `json:"history"`
	Summary struct {
		Events     int64            `json:"events"`
		Agents     int              `json:"agents"`
		Outcomes   map[string]int64 `json:"outcomes"`
		Rehydrated int64            `json:"bytes_rehydrated"`
	} `json:"summary"`
}

func demoJSONRun(t *testing.T, args ...string) demoOut {
	t.Helper()
	r := run(t, append([]string{"demo", "--json"}, args...)...)
	wantCode(t, r, ExitOK)
	var v demoOut
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout is not one JSON line: %v\n%s", err, r.stdout)
	}
	return v
}

func TestDemoJSONAndRepeat(t *testing.T) {
	ws := newWorkspace(t)
	first := demoJSONRun(t, "--workspace", ws, "--session", "fixed", "--run-id", "run-a")
	if first.RunID != "run-a" || first.Turns != 13 || first.ToolCalls != 11 || first.Summary.Events != 16 || first.Summary.Agents != 2 ||
		first.Summary.Rehydrated != 975 || !strings.HasPrefix(first.Final, "The nightly build failed because the linker ran out of memory") {
		t.Fatalf("first run %+v", first)
	}
	if first.History.Bytes*100 > first.History.WithoutOffload || first.Summary.Outcomes["offloaded"] != 4 {
		t.Fatalf("history %+v, outcomes %v", first.History, first.Summary.Outcomes)
	}
	// The same owner again: the same references, nothing new stored.
	second := demoJSONRun(t, "--workspace", ws, "--session", "fixed")
	if o := second.Summary.Outcomes; o["offloaded"] != 0 || o["existing_reference"] != 5 || second.History != first.History {
		t.Fatalf("second run %v, history %+v vs %+v", o, second.History, first.History)
	}
}

func TestDemoEvents(t *testing.T) {
	inv := invocation{env: map[string]string{EnvUser: "SECRET-USER", EnvSession: "SECRET-SESSION"}}
	r := inv.run(t, "demo", "--workspace", "mem://", "--events", "-", "--run-id", "r1")
	wantCode(t, r, ExitOK)
	if strings.Contains(r.stderr, "SECRET") || strings.Contains(r.stdout, "SECRET") {
		t.Fatal("the owner reached the output")
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 17 {
		t.Fatalf("%d event lines (16 decisions and one compaction step):\n%s", len(lines), r.stderr)
	}
	children, steps := 0, 0
	for i, l := range lines {
		var ev struct {
			Type     string  `json:"type"`
			Sequence int     `json:"sequence"`
			RunID    string  `json:"run_id"`
			Agent    string  `json:"agent_id"`
			Parent   *string `json:"parent_agent_id"`
			Depth    int     `json:"depth"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if ev.Sequence != i+1 || ev.RunID != "r1" {
			t.Fatalf("line %d: %s", i, l)
		}
		if ev.Type == string(hybridctx.HistoryCompaction) {
			// The root agent's history budget steps once, masking two
			// results: the cached prefix is invalidated.
			steps++
			e, err := hybridctx.ParseEvent([]byte(l))
			if err != nil || ev.Agent != AgentID || e.Compaction.ResultsMasked() != 2 || !e.Compaction.InvalidatesCachedPrefix() ||
				e.Compaction.OverBudget() || e.Compaction.After().Bytes >= e.Compaction.Before().Bytes {
				t.Fatalf("compaction event %s: %v", l, err)
			}
		}
		switch ev.Agent {
		case AgentID:
			if ev.Parent != nil || ev.Depth != 0 {
				t.Fatalf("root event %s", l)
			}
		case "researcher-1":
			children++
			if ev.Parent == nil || *ev.Parent != AgentID || ev.Depth != 1 {
				t.Fatalf("child event %s", l)
			}
		default:
			t.Fatalf("agent %q", ev.Agent)
		}
	}
	if children != 3 || steps != 1 {
		t.Fatalf("%d child events, want 3; %d compaction steps, want 1", children, steps)
	}
}

func TestDemoUsage(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--threshold", "0", "--workspace", "mem://"},
		{"demo", "--budget", "-1", "--workspace", "mem://"},
		{"demo", "--history-budget", "-1", "--workspace", "mem://"},
		{"demo", "--threshold", "x"},
		{"demo", "extra", "--workspace", "mem://"},
		{"demo", "--workspace", "file://host/x"},
		{"demo", "--workspace", "mem://", "--user", "\xff"},
	} {
		r := run(t, args...)
		wantCode(t, r, ExitUsage)
		wantOneErrorLine(t, r)
	}
	// A tiny threshold still keeps the invariant: notices and errors are
	// bounded by their own limit, not the threshold.
	r := run(t, "demo", "--workspace", "mem://", "--threshold", "1", "--budget", "1")
	wantCode(t, r, ExitOK)
	if !strings.Contains(r.stdout, "invariant    ok") || !strings.Contains(r.stdout, "over_budget 3") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	// Without a history budget nothing is masked.
	r = run(t, "demo", "--workspace", "mem://", "--history-budget", "0")
	wantCode(t, r, ExitOK)
	if strings.Contains(r.stdout, "[masked]") || strings.Contains(r.stdout, "compaction") {
		t.Fatalf("masked without a budget:\n%s", r.stdout)
	}
}

func TestStatusLine(t *testing.T) {
	var buf bytes.Buffer
	s := sink.NewSummary()
	st := &statusLine{w: &buf, summary: s}
	st.clear()
	if buf.Len() != 0 {
		t.Fatal("cleared a line never drawn")
	}
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, workspace.New(mem, mem))
	dr, err := newDemoRun(bind, demoFlags{threshold: 4096, budget: 65536, history: demoHistoryBudget})
	if err != nil {
		t.Fatal(err)
	}
	ctx := hybridctx.WithReporter(context.Background(), hybridctx.NewReporter(hybridctx.ReporterOptions{AgentID: AgentID, Sinks: []hybridctx.Sink{s, st}}))
	if _, err := dr.play(ctx); err != nil {
		t.Fatal(err)
	}
	st.clear()
	out := buf.String()
	if strings.Count(out, "\r\x1b[K") != 17 || strings.Contains(out, "\n") || !strings.HasSuffix(out, "rehydrated\r\x1b[K") ||
		!strings.Contains(out, "hybridctx demo · researcher-1 · 13 decisions") {
		t.Fatalf("status output %q", out)
	}
}

func TestDemoNoStatusLineOnAPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	code := Main(context.Background(), []string{"demo", "--workspace", "mem://"}, Env{Stdout: &out, Stderr: w})
	_ = w.Close()
	got, _ := io.ReadAll(r)
	if code != ExitOK || len(got) != 0 || !strings.Contains(out.String(), "invariant    ok") {
		t.Fatalf("exit %d, stderr %q", code, got)
	}
}
