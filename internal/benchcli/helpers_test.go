package benchcli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/internal/cli"
	"github.com/hybridctx/hybridctx/internal/longtest"
)

// result is what one in-process Main call produced.
type result struct {
	code   int
	stdout string
	stderr string
}

// run calls Main in process with args, no environment and empty stdin.
func run(t *testing.T, args ...string) result {
	t.Helper()
	return runWith(t, strings.NewReader(""), args...)
}

// withInput runs with stdin set to b.
func withInput(t *testing.T, b []byte, args ...string) result {
	t.Helper()
	return runWith(t, bytes.NewReader(b), args...)
}

func runWith(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, cli.Env{
		Stdin:  stdin,
		Stdout: &out,
		Stderr: &errb,
		Getenv: func(string) string { return "" },
	})
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// newWorkspace returns a fresh directory workspace path.
func newWorkspace(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "ws")
}

// wantCode fails the test unless r exited with code.
func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %.400q\nstderr: %q", r.code, code, r.stdout, r.stderr)
	}
}

// wantOneErrorLine fails unless stderr is exactly one "hybridctx-bench: "
// line containing every fragment, and stdout is empty.
func wantOneErrorLine(t *testing.T, r result, fragments ...string) {
	t.Helper()
	if r.stdout != "" {
		t.Errorf("stdout = %.200q, want empty", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, Name+": ") || !strings.HasSuffix(r.stderr, "\n") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("stderr = %q, want one line starting with %s: ", r.stderr, Name)
	}
	for _, f := range fragments {
		if !strings.Contains(r.stderr, f) {
			t.Errorf("stderr = %q, want it to contain %q", r.stderr, f)
		}
	}
}

func skipUnlessLong(t testing.TB) {
	t.Helper()
	longtest.Skip(t)
}
