package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binPath is the hybridctx binary TestMain built, or "" with buildErr set.
var (
	binPath  string
	buildErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hybridctx-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "hybridctx")
	out, err := exec.Command("go", "build", "-o", binPath, "github.com/hybridctx/hybridctx/cmd/hybridctx").CombinedOutput()
	if err != nil {
		buildErr = fmt.Errorf("go build: %v\n%s", err, out)
	}
	code := m.Run()
	reportE2ESkips()
	_ = os.RemoveAll(dir)
	if testServerDir != "" {
		_ = os.RemoveAll(testServerDir)
	}
	os.Exit(code)
}

// procResult is what one run of the real binary produced.
type procResult struct {
	code           int
	stdout, stderr []byte
}

// runBinary runs the built binary in dir with exactly the environment env.
func runBinary(t *testing.T, dir string, env []string, stdin []byte, args ...string) procResult {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return procResult{code: code, stdout: out.Bytes(), stderr: errb.Bytes()}
}

func TestBinary(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	env := []string{"HYBRIDCTX_USER=ada", "HYBRIDCTX_WORKFLOW=triage", "HYBRIDCTX_SESSION=s1"}
	in := randomBytes(mib3, 30)

	// Default workspace: .hybridctx in the current directory; events on stderr.
	off := runBinary(t, dir, env, in, "offload", "--threshold", "1024", "--events", "-")
	if off.code != 0 {
		t.Fatalf("offload exit %d, stderr %s", off.code, off.stderr)
	}
	ref, _, _ := strings.Cut(string(off.stdout), "\n")
	if !strings.HasPrefix(ref, "artifact://sha256/") || strings.Count(string(off.stdout), "\n") != 3 {
		t.Fatalf("stdout %q", off.stdout)
	}
	if ev := parseEvents(t, string(off.stderr)); len(ev) != 1 || ev[0].Type != "offload_decision" {
		t.Fatalf("stderr %q, want one event", off.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, DefaultWorkspace, "records.db")); err != nil {
		t.Fatalf("default workspace not in the current directory: %v", err)
	}

	got := runBinary(t, dir, env, nil, "rehydrate", ref, "--budget", fmt.Sprint(mib3))
	if got.code != 0 || !bytes.Equal(got.stdout, in) || len(got.stderr) != 0 {
		t.Fatalf("rehydrate exit %d, %d bytes (equal %v), stderr %q", got.code, len(got.stdout), bytes.Equal(got.stdout, in), got.stderr)
	}

	// A categorical outcome: nothing on stdout, one line on stderr.
	over := runBinary(t, dir, env, nil, "rehydrate", ref, "--budget", "10")
	if over.code != ExitOverBudget || len(over.stdout) != 0 ||
		string(over.stderr) != fmt.Sprintf("hybridctx: over_budget (budget_exceeded): the range is %d bytes, the budget 10; use --offset/--length\n", mib3) {
		t.Fatalf("over budget: exit %d stdout %q stderr %q", over.code, over.stdout, over.stderr)
	}
	bad := runBinary(t, dir, env, nil, "rehydrate", "bad", "--budget", "10")
	if bad.code != ExitInvalidReference || len(bad.stdout) != 0 || bytes.Count(bad.stderr, []byte("\n")) != 1 {
		t.Fatalf("invalid: exit %d stdout %q stderr %q", bad.code, bad.stdout, bad.stderr)
	}

	// Usage errors: exit 2, one line, no usage dump, no stack trace.
	for _, args := range [][]string{{"bogus"}, {"offload", "--threshold", "x"}, {"ls", "--user="}} {
		r := runBinary(t, dir, env, nil, args...)
		if r.code != ExitUsage || len(r.stdout) != 0 || bytes.Count(r.stderr, []byte("\n")) != 1 ||
			!bytes.HasPrefix(r.stderr, []byte("hybridctx: ")) || bytes.Contains(r.stderr, []byte("Usage:")) {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	noOwner := runBinary(t, dir, nil, nil, "ls")
	if noOwner.code != ExitUsage || !bytes.Contains(noOwner.stderr, []byte("missing owner: user, workflow, session")) {
		t.Errorf("no owner: exit %d stderr %q", noOwner.code, noOwner.stderr)
	}

	// verify: clean, then damage after a chmod.
	if v := runBinary(t, dir, nil, nil, "verify"); v.code != 0 {
		t.Fatalf("verify exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
	body := filepath.Join(dir, DefaultWorkspace, "sha256", strings.TrimPrefix(ref, "artifact://sha256/"))
	if err := os.Chmod(body, 0o640); err != nil {
		t.Fatal(err)
	}
	if v := runBinary(t, dir, nil, nil, "verify"); v.code != ExitDamage || len(v.stderr) != 0 {
		t.Fatalf("verify exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
}
