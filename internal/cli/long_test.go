package cli

import (
	"testing"

	"github.com/hybridctx/hybridctx/internal/longtest"
)

// skipUnlessLong skips a long test (a sweep, crash or fault run, big
// bodies, many processes) unless HYBRIDCTX_TEST_LONG=1, as .ci/run sets it.
func skipUnlessLong(t testing.TB) {
	t.Helper()
	longtest.Skip(t)
}

// longRun reports whether the long tests run: a test that repeats its
// cases runs them fewer times otherwise.
func longRun() bool { return longtest.Enabled() }
