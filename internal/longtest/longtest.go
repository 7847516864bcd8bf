// Package longtest is the one switch of the long tests: the sweeps, crash
// and fault runs, big bodies and soak-like runs that CI runs and a plain
// "go test ./..." skips, so that the README's test command stays short.
// .ci/run sets the switch; nothing is dropped from CI.
package longtest

import (
	"os"
	"testing"
)

// Env is the environment variable that runs the long tests when it is "1".
const Env = "HYBRIDCTX_TEST_LONG"

// Enabled reports whether the long tests run.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Skip skips t unless the long tests run, naming the switch.
func Skip(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skip("a long test: " + Env + "=1 runs it (.ci/run sets it)")
	}
}
