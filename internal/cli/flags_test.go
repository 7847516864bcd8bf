package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

func TestFlagsInterleavedAndEquals(t *testing.T) {
	ws := newWorkspace(t)
	in := bytes.Repeat([]byte("z"), 500)
	path := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(path, in, 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "--user=ada", "offload", "--workflow", "triage", path, "--threshold=10",
		"--session", "s1", "--workspace="+ws, "--json")
	wantCode(t, r, ExitOK)
	m := decodeObject(t, r.stdout)
	ref := str(t, m["reference"])
	if ref != artifact.RefOf(in).String() {
		t.Fatalf("reference %q", ref)
	}
	// Global flags after the command's argument, in both spellings.
	got := run(t, "rehydrate", ref, "--budget=500", "--session=s1", "--workspace", ws, "--user", "ada", "--workflow=triage")
	wantCode(t, got, ExitOK)
	if got.stdout != string(in) {
		t.Fatal("round trip differs")
	}
	// After "--", a flag is an argument: here a file name that does not exist.
	r = run(t, host(ws, "offload", "--threshold", "10", "--", "--json")...)
	wantCode(t, r, ExitUsage)
	wantOneErrorLine(t, r, "cannot read the input")
}

func TestEnvAndFlagPrecedence(t *testing.T) {
	ws := newWorkspace(t)
	env := map[string]string{
		EnvWorkspace: ws, EnvUser: "env-user", EnvWorkflow: "env-flow", EnvSession: "env-session",
	}
	in := bytes.Repeat([]byte("e"), 300)
	// All from the environment.
	r := invocation{env: env, stdin: bytes.NewReader(in)}.run(t, "offload", "--threshold", "10")
	wantCode(t, r, ExitOK)
	ls := invocation{env: env}.run(t, "ls", "--json")
	if strings.Count(ls.stdout, "\n") != 1 {
		t.Fatalf("env owner's ls %q", ls.stdout)
	}
	// A flag wins over its variable: --user makes another owner.
	flagged := invocation{env: env}.run(t, "ls", "--json", "--user", "flag-user")
	wantCode(t, flagged, ExitOK)
	if flagged.stdout != "" {
		t.Fatalf("flag owner sees the env owner's records: %q", flagged.stdout)
	}
	// --workspace wins over HYBRIDCTX_WORKSPACE.
	other := existingWorkspace(t)
	r = invocation{env: env}.run(t, "ls", "--workspace", other)
	wantCode(t, r, ExitOK)
	if strings.Count(r.stdout, "\n") != 1 { // header only
		t.Fatalf("--workspace ignored: %q", r.stdout)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("--workspace was not opened: %v", err)
	}
	// An explicitly empty flag does not fall back to the variable.
	r = invocation{env: env}.run(t, "ls", "--session=")
	wantCode(t, r, ExitUsage)
	wantOneErrorLine(t, r, "missing owner: session (set --session or HYBRIDCTX_SESSION)")
}

func TestMissingOwnerNamed(t *testing.T) {
	ws := newWorkspace(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	ref := artifact.RefOf([]byte("x")).String()
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--workflow", "w", "offload", "--threshold", "1"},
			"missing owner: user, session (set --user/--session or HYBRIDCTX_USER/HYBRIDCTX_SESSION)"},
		{map[string]string{EnvUser: "u"}, []string{"rehydrate", "not-a-ref", "--budget", "1"},
			"missing owner: workflow, session (set --workflow/--session or HYBRIDCTX_WORKFLOW/HYBRIDCTX_SESSION)"},
		{map[string]string{EnvUser: "u", EnvSession: "s"}, []string{"ls"},
			"missing owner: workflow (set --workflow or HYBRIDCTX_WORKFLOW)"},
		{nil, []string{"stat", "not-a-ref"},
			"missing owner: user, workflow, session (set --user/--workflow/--session or HYBRIDCTX_USER/HYBRIDCTX_WORKFLOW/HYBRIDCTX_SESSION)"},
		{map[string]string{EnvUser: "  ", EnvWorkflow: "w", EnvSession: "s"}, []string{"rehydrate", ref, "--budget", "1"},
			"missing owner: user (set --user or HYBRIDCTX_USER)"},
	}
	for _, c := range cases {
		spy := &spyReader{}
		args := append([]string{"--workspace", ws, "--events", events}, c.args...)
		r := invocation{env: c.env, stdin: spy}.run(t, args...)
		wantCode(t, r, ExitUsage)
		wantOneErrorLine(t, r)
		if r.stderr != "hybridctx: "+c.want+"\n" {
			t.Errorf("stderr %q, want %q", r.stderr, c.want)
		}
		if spy.read {
			t.Errorf("%v: the input was read", c.args)
		}
	}
	if ev := readEvents(t, events); len(ev) != 0 {
		t.Errorf("%d events reported", len(ev))
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("workspace opened without an owner (stat err %v)", err)
	}
}

func TestEventsToStderr(t *testing.T) {
	ws := newWorkspace(t)
	in := bytes.Repeat([]byte("s"), 400)
	r := withInput(t, in, host(ws, "--events", "-", "offload", "--threshold", "10")...)
	wantCode(t, r, ExitOK)
	if !strings.HasPrefix(r.stdout, artifact.RefOf(in).String()+"\n") || strings.Contains(r.stdout, "offload_decision") {
		t.Fatalf("stdout %q", r.stdout)
	}
	ev := parseEvents(t, r.stderr)
	if len(ev) != 1 {
		t.Fatalf("stderr %q, want one event line", r.stderr)
	}
	e := ev[0]
	if e.Type != "offload_decision" || e.Sequence != 1 || e.AgentID != AgentID || e.Parent != nil || e.Depth != 0 || len(e.RunID) != 32 {
		t.Errorf("event %+v", e)
	}
	if len(e.Time) != len(hybridctx.TimeLayout) || !strings.HasSuffix(e.Time, "Z") {
		t.Errorf("event time %q", e.Time)
	}
	if str(t, e.Diagnostics["outcome"]) != "offloaded" {
		t.Errorf("event diagnostics %v", e.Diagnostics)
	}

	// rehydrate: stdout is exactly the bytes, the event goes to stderr.
	got := run(t, host(ws, "rehydrate", artifact.RefOf(in).String(), "--budget", "400", "--events=-")...)
	wantCode(t, got, ExitOK)
	if got.stdout != string(in) || len(parseEvents(t, got.stderr)) != 1 {
		t.Fatalf("stdout %d bytes, stderr %q", len(got.stdout), got.stderr)
	}
	// No --events, no event anywhere.
	quiet := withInput(t, in, host(ws, "offload", "--threshold", "10")...)
	if quiet.stderr != "" {
		t.Errorf("stderr without --events: %q", quiet.stderr)
	}
}

func TestEventsFileAppended(t *testing.T) {
	ws := newWorkspace(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	for i := range 2 {
		r := withInput(t, bytes.Repeat([]byte{'a' + byte(i)}, 100), host(ws, "--events", events, "offload", "--threshold", "10")...)
		wantCode(t, r, ExitOK)
	}
	ev := readEvents(t, events)
	if len(ev) != 2 {
		t.Fatalf("%d events, want 2", len(ev))
	}
	if ev[0].Sequence != 1 || ev[1].Sequence != 1 {
		t.Errorf("sequences %d, %d, want 1 per process", ev[0].Sequence, ev[1].Sequence)
	}
	if ev[0].RunID == ev[1].RunID {
		t.Errorf("two runs share run id %q", ev[0].RunID)
	}
	fi, err := os.Stat(events)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("events file mode %v (err %v), want 0600", fi.Mode(), err)
	}
	for range 2 {
		wantCode(t, run(t, host(ws, "--events", events, "--run-id", "fixed", "rehydrate", "bad", "--budget", "1")...), ExitInvalidReference)
	}
	ev = readEvents(t, events)
	if len(ev) != 4 || ev[2].RunID != "fixed" || ev[3].RunID != "fixed" || ev[3].Sequence != 1 {
		t.Fatalf("events %+v", ev)
	}
}

func TestEventsFileUnopenable(t *testing.T) {
	ws := newWorkspace(t)
	r := withInput(t, []byte("x"), host(ws, "--events", filepath.Join(t.TempDir(), "no", "such", "dir"), "offload", "--threshold", "10")...)
	wantCode(t, r, ExitUsage)
	wantOneErrorLine(t, r, "cannot open the events file")
}

func TestWorkspaceURLs(t *testing.T) {
	in := bytes.Repeat([]byte("w"), 100)
	r := withInput(t, in, append([]string{"--workspace", "file://host/x"}, append(ownerArgs(), "offload", "--threshold", "10")...)...)
	wantCode(t, r, ExitUsage)
	wantOneErrorLine(t, r, "file:// URL with a host")

	dir := newWorkspace(t)
	ref := offloadRef(t, "file://"+dir, in)
	if _, err := os.Stat(bodyPath(dir, ref)); err != nil {
		t.Fatalf("file:/// workspace did not store in %s: %v", dir, err)
	}

	// A workspace that cannot be opened: a regular file where the directory should be.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(t.TempDir(), "events.jsonl")
	r = withInput(t, in, host(file, "--events", events, "offload", "--threshold", "10")...)
	wantCode(t, r, ExitInternal)
	wantOneErrorLine(t, r, "cannot open the workspace")
	if ev := readEvents(t, events); len(ev) != 0 {
		t.Errorf("%d events", len(ev))
	}
	r = run(t, host("postgres://db/x", "ls")...)
	wantCode(t, r, ExitInternal)
	wantOneErrorLine(t, r, "not available")
}

func TestMalformedOwnerIsUsageErrorEverywhere(t *testing.T) {
	ws := newWorkspace(t)
	ref := artifact.RefOf([]byte("x")).String()
	owners := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--user", " ada", "--workflow", "w", "--session", "s"}, "user has leading or trailing space"},
		{nil, []string{"--user", "ada", "--workflow", "w\n", "--session", "s"}, "workflow contains a control character"},
		{map[string]string{EnvUser: "ada", EnvWorkflow: "w", EnvSession: "s\x1b[2J"}, nil, "session contains a control character"},
		{map[string]string{EnvUser: "ada ", EnvWorkflow: "w", EnvSession: "s"}, nil, "user has leading or trailing space"},
	}
	commands := [][]string{
		{"offload", "--threshold", "1"},
		{"rehydrate", ref, "--budget", "1"},
		{"ls"},
		{"stat", ref},
		{"mcp", "--", "true"},
	}
	for _, o := range owners {
		for _, c := range commands {
			spy := &spyReader{}
			args := append(append([]string{"--workspace", ws}, o.args...), c...)
			r := invocation{env: o.env, stdin: spy}.run(t, args...)
			wantCode(t, r, ExitUsage)
			wantOneErrorLine(t, r, o.want)
			if spy.read {
				t.Errorf("%v: the input was read", c)
			}
		}
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("workspace opened with a malformed owner (stat err %v)", err)
	}
}
