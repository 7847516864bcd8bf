package dirstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

// TestConformance runs the shared backend suite against a fresh directory
// workspace, with a tamper hook that rewrites a body file in place (as bit
// rot or a stray editor would).
func TestConformance(t *testing.T) {
	drivertest.RunWith(t, drivertest.Harness{
		Open: func(t *testing.T) (driver.Bodies, driver.Records) {
			s := openNew(t)
			return s, s
		},
		Tamper: func(t *testing.T, b driver.Bodies, key string, data []byte) {
			t.Helper()
			path := filepath.Join(b.(*dirstore.Store).Dir(), "sha256", key)
			if _, err := os.Lstat(path); err != nil {
				t.Fatalf("tamper: %v", err)
			}
			if err := os.Chmod(path, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o400); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// BenchmarkConformance runs the shared workspace benchmarks (hashing,
// verification and records included) over a directory workspace.
func BenchmarkConformance(b *testing.B) {
	drivertest.RunBenchmarks(b, func(b *testing.B) (driver.Bodies, driver.Records) {
		s := openNew(b)
		return s, s
	})
}
