package viewengine

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
