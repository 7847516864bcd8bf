package longtest_test

import (
	"testing"

	"github.com/hybridctx/hybridctx/internal/longtest"
)

// TestSwitch: the long tests run exactly when the variable is "1".
func TestSwitch(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "": false, "0": false, "true": false} {
		t.Setenv(longtest.Env, v)
		if got := longtest.Enabled(); got != want {
			t.Errorf("%s=%q: Enabled() = %v, want %v", longtest.Env, v, got, want)
		}
	}
	t.Setenv(longtest.Env, "")
	skipped := false
	t.Run("skips", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		longtest.Skip(t)
	})
	if !skipped {
		t.Error("Skip did not skip with the switch off")
	}
}
