package cli

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the records database of directory workspaces

	"github.com/hybridctx/hybridctx"
)

func TestOutcomeExitCodeTable(t *testing.T) {
	want := map[hybridctx.Outcome]int{
		hybridctx.Inline:            0,
		hybridctx.Offloaded:         0,
		hybridctx.ExistingReference: 0,
		hybridctx.Resolved:          0,
		hybridctx.InvalidReference:  3,
		hybridctx.Unauthorized:      4,
		hybridctx.Missing:           5,
		hybridctx.OverBudget:        6,
		hybridctx.Stale:             7,
		hybridctx.Failed:            8,
		hybridctx.RecoveryRequired:  9,
		hybridctx.ViewFailed:        11,
		hybridctx.Outcome(0):        1,
		hybridctx.Outcome(200):      1,
	}
	for o, code := range want {
		if got := OutcomeExitCode(o); got != code {
			t.Errorf("OutcomeExitCode(%v) = %d, want %d", o, got, code)
		}
	}
	// The error side of the table.
	errs := []struct {
		err  error
		code int
	}{
		{nil, 0},
		{outcomeExit(hybridctx.Resolved, "ignored"), 0},
		{outcomeExit(hybridctx.RecoveryRequired, ""), 9},
		{usagef("bad"), 2},
		{internal("x", errors.New("boom")), 1},
		{errors.New(`unknown command "x" for "hybridctx"`), 2},
		{&exitError{code: ExitDamage}, 10},
	}
	for _, e := range errs {
		if got, _ := exitCode(e.err); got != e.code {
			t.Errorf("exitCode(%v) = %d, want %d", e.err, got, e.code)
		}
	}
	if _, msg := exitCode(internal("x", errors.Join(errors.New("a\nsecret"), errors.New("b")))); msg != "x: storage error" {
		t.Errorf("message %q: want the category, never the raw text", msg)
	}
}

// TestRecoveryRequired reaches exit 9 through the command line: a trigger
// makes the records database refuse inserts, so the body is written but its
// record cannot be committed (record_commit_failed). Retrying after the
// trigger is gone registers it without writing the body again.
func TestRecoveryRequired(t *testing.T) {
	ws := existingWorkspace(t)
	db, err := sql.Open("sqlite", filepath.Join(ws, "records.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER deny BEFORE INSERT ON records BEGIN SELECT RAISE(ABORT, 'denied'); END`); err != nil {
		t.Fatal(err)
	}
	in := randomBytes(5000, 20)
	r := withInput(t, in, host(ws, "offload", "--threshold", "10")...)
	wantCode(t, r, ExitRecoveryRequired)
	if !strings.HasPrefix(r.stdout, "hybridctx: recovery_required (record_commit_failed), 5000 bytes\n") || strings.Contains(r.stdout, "artifact://") {
		t.Fatalf("stdout %q", r.stdout)
	}
	js := withInput(t, in, host(ws, "--json", "offload", "--threshold", "10")...)
	wantCode(t, js, ExitRecoveryRequired)
	if m := decodeObject(t, js.stdout); str(t, m["outcome"]) != "recovery_required" || string(m["reference"]) != "null" {
		t.Fatalf("--json %q", js.stdout)
	}
	if _, err := db.Exec(`DROP TRIGGER deny`); err != nil {
		t.Fatal(err)
	}
	retry := withInput(t, in, host(ws, "offload", "--threshold", "10")...)
	wantCode(t, retry, ExitOK)
	got := run(t, host(ws, "rehydrate", strings.SplitN(retry.stdout, "\n", 2)[0], "--budget", "5000")...)
	wantCode(t, got, ExitOK)
	if got.stdout != string(in) {
		t.Fatal("bytes differ after recovery")
	}
}

func TestUsageErrors(t *testing.T) {
	ws := newWorkspace(t)
	cases := map[string][]string{
		"unknown command":        {"bogus"},
		"unknown flag":           {"ls", "--nope"},
		"ls with an argument":    {"ls", "extra"},
		"threshold missing":      {"offload"},
		"threshold zero":         {"offload", "--threshold", "0"},
		"threshold not numeric":  {"offload", "--threshold", "10k"},
		"threshold over max":     {"offload", "--threshold", "100", "--max-bytes", "50"},
		"threshold over 64 MiB":  {"offload", "--threshold", "67108865", "--max-bytes", "200000000000"},
		"threshold huge":         {"offload", "--threshold", "9223372036854775807", "--max-bytes", "9223372036854775807"},
		"max-bytes negative":     {"offload", "--threshold", "10", "--max-bytes=-1"},
		"two inputs":             {"offload", "a", "b", "--threshold", "10"},
		"stat without ref":       {"stat"},
		"verify argument":        {"verify", "x"},
		"flag without value":     {"offload", "--threshold"},
		"empty workspace":        {"ls", "--workspace="},
		"unknown scheme":         {"ls", "--workspace", "ftp://x"},
		"mcp threshold over max": {"mcp", "--threshold", "100", "--max-bytes", "50", "--", "true"},
		"gc max-age short":       {"gc", "--max-age", "1m"},
		"rehydrate no budget":    {"rehydrate", "artifact://sha256/x"},
		"offload events dir":     {"offload", "--threshold", "10", "--events", "/nonexistent/dir/events.jsonl"},
		"mcp events dir":         {"mcp", "--events", "/nonexistent/dir/events.jsonl", "--", "true"},
		"demo events dir":        {"demo", "--events", "/nonexistent/dir/events.jsonl"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			spy := &spyReader{}
			r := invocation{stdin: spy}.run(t, host(ws, args...)...)
			wantCode(t, r, ExitUsage)
			wantOneErrorLine(t, r)
			if spy.read {
				t.Error("input read")
			}
		})
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("a usage error created the workspace (stat err %v)", err)
	}
}

func TestHelpShowsExitCodes(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"offload", "--help"}, {"rehydrate", "-h"}, {"help", "ls"}, {"stat", "--help"}, {"verify", "--help"}} {
		r := run(t, args...)
		wantCode(t, r, ExitOK)
		// Each help names the codes of its command (TestHelpExitCodes).
		name := map[string]string{"--help": "", "help": "ls"}[args[0]]
		if name == "" && args[0] != "--help" {
			name = args[0]
		}
		for _, e := range exitTable {
			line := fmt.Sprintf("\n  %2d  ", e.code)
			if want := name == "" || slices.Contains(commandExits[name], e.code); strings.Contains(r.stdout, line) != want {
				t.Errorf("%v help: %q listed %v, want %v", args, line, !want, want)
			}
		}
		if r.stderr != "" {
			t.Errorf("%v: stderr %q", args, r.stderr)
		}
	}
	r := run(t, "verify", "--help")
	if !strings.Contains(r.stdout, `{"bodies": N, "corrupt": [REF...]`) {
		t.Errorf("verify help does not document the JSON shape:\n%s", r.stdout)
	}
}

func TestNilEnvAndArgs(t *testing.T) {
	if code := Main(t.Context(), nil, Env{}); code != ExitOK {
		t.Fatalf("no arguments: exit %d", code)
	}
	var out bytes.Buffer
	if code := Main(t.Context(), []string{"verify", "--workspace", "mem://"}, Env{Stdout: &out}); code != ExitOK || out.Len() == 0 {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
}

// TestJSONAfterABadFlag: --json prints the error object on standard output
// wherever it stands, also after the flag whose value stopped parsing.
func TestJSONAfterABadFlag(t *testing.T) {
	ws := newWorkspace(t)
	ref := "artifact://sha256/" + strings.Repeat("ab", 32)
	for _, args := range [][]string{
		host(ws, "--json", "rehydrate", ref, "--budget", "x"),
		host(ws, "rehydrate", ref, "--budget", "x", "--json"),
		host(ws, "rehydrate", ref, "--budget", "x", "--json=true"),
		host(ws, "search", ref, "p", "--no-such-flag", "--json"),
	} {
		r := run(t, args...)
		if r.code != ExitUsage {
			t.Fatalf("%v: exit %d", args, r.code)
		}
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &e); err != nil || e.Error.Code != "usage" ||
			"hybridctx: "+e.Error.Message+"\n" != r.stderr {
			t.Errorf("%v: stdout %q (%v), stderr %q", args, r.stdout, err, r.stderr)
		}
	}
	for _, args := range [][]string{
		host(ws, "rehydrate", ref, "--budget", "x"),
		host(ws, "rehydrate", ref, "--budget", "x", "--json=false"),
		host(ws, "rehydrate", ref, "--budget", "x", "--", "--json"),
	} {
		if r := run(t, args...); r.code != ExitUsage || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}
