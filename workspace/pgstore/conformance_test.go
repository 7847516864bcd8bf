package pgstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
	"github.com/hybridctx/hybridctx/workspace/pgstore/pgtest"
)

// schemas maps each open Store to the URL of its schema, for Tamper.
var schemas sync.Map

// openNew opens a Store on a fresh schema, closed when tb ends.
func openNew(tb testing.TB, opts *pgstore.Options) (*pgstore.Store, string) {
	tb.Helper()
	u := pgtest.NewSchema(tb)
	s, err := pgstore.Open(context.Background(), u, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	schemas.Store(s, u)
	return s, u
}

// TestConformance runs the shared backend suite on PostgreSQL, tampering
// with a body by rewriting its row with the CHECK constraint dropped (and
// restored NOT VALID) inside one transaction.
func TestConformance(t *testing.T) {
	drivertest.RunWith(t, drivertest.Harness{
		Open: func(t *testing.T) (driver.Bodies, driver.Records) {
			s, _ := openNew(t, nil)
			return s, s
		},
		Tamper: func(t *testing.T, b driver.Bodies, key string, data []byte) {
			t.Helper()
			u, ok := schemas.Load(b)
			if !ok {
				t.Fatalf("tamper: unknown store")
			}
			pgtest.Tamper(t, u.(string), key, data)
		},
	})
}

// BenchmarkConformance runs the shared workspace benchmarks on PostgreSQL.
func BenchmarkConformance(b *testing.B) {
	drivertest.RunBenchmarks(b, func(b *testing.B) (driver.Bodies, driver.Records) {
		s, _ := openNew(b, nil)
		return s, s
	})
}
