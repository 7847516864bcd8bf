package blobstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/hybridctx/hybridctx/workspace/blobstore"
	"github.com/hybridctx/hybridctx/workspace/blobstore/blobtest"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
	"github.com/hybridctx/hybridctx/workspace/pgstore/pgtest"
)

// prefixes maps each open Store to its bucket URL, for Tamper.
var prefixes sync.Map

// openNew opens bodies under a fresh prefix of the test bucket, with records
// and locks in a fresh PostgreSQL schema, as package backend wires them.
func openNew(tb testing.TB, opts *blobstore.Options) (*blobstore.Store, *pgstore.Store, string) {
	tb.Helper()
	ctx := context.Background()
	u := blobtest.NewPrefix(tb)
	idx, err := pgstore.Open(ctx, pgtest.NewSchema(tb), &pgstore.Options{Bodies: pgstore.BodiesElsewhere})
	if err != nil {
		tb.Fatalf("pgstore.Open: %v", err)
	}
	tb.Cleanup(func() { idx.Close() })
	b, err := blobstore.OpenBucket(ctx, u)
	if err != nil {
		tb.Fatalf("OpenBucket: %v", err)
	}
	var o blobstore.Options
	if opts != nil {
		o = *opts
	}
	if o.Locker == nil {
		o.Locker = idx
	}
	s, err := blobstore.New(b, &o)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	prefixes.Store(s, u)
	return s, idx, u
}

func tamper(t *testing.T, b driver.Bodies, key string, data []byte) {
	t.Helper()
	u, ok := prefixes.Load(b)
	if !ok {
		t.Fatalf("tamper: unknown store")
	}
	blobtest.Tamper(t, u.(string), key, data)
}

// TestConformance runs the shared backend suite on S3 bodies with
// PostgreSQL records, tampering by writing objects directly in the bucket.
func TestConformance(t *testing.T) {
	drivertest.RunWith(t, drivertest.Harness{
		Open: func(t *testing.T) (driver.Bodies, driver.Records) {
			s, idx, _ := openNew(t, nil)
			return s, idx
		},
		Tamper: tamper,
	})
}

// TestConformanceStreamed runs the suite with a tiny spool, so that every
// body but the smallest takes the streamed upload path.
func TestConformanceStreamed(t *testing.T) {
	drivertest.RunWith(t, drivertest.Harness{
		Open: func(t *testing.T) (driver.Bodies, driver.Records) {
			s, idx, _ := openNew(t, &blobstore.Options{SpoolBytes: 1024})
			return s, idx
		},
		Tamper: tamper,
	})
}

// BenchmarkConformance runs the shared workspace benchmarks on S3 bodies
// with PostgreSQL records.
func BenchmarkConformance(b *testing.B) {
	drivertest.RunBenchmarks(b, func(b *testing.B) (driver.Bodies, driver.Records) {
		s, idx, _ := openNew(b, nil)
		return s, idx
	})
}
