package memstore_test

import (
	"context"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"

	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

func open(testing.TB) (driver.Bodies, driver.Records) {
	s := memstore.New()
	return s, s
}

func TestConformance(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) (driver.Bodies, driver.Records) { return open(t) })
}

func BenchmarkMemstore(b *testing.B) {
	drivertest.RunBenchmarks(b, func(b *testing.B) (driver.Bodies, driver.Records) { return open(b) })
}

// TestWriterEnded: once a writer is committed or aborted, adopting bytes
// or comparing what it was given is an error, and changes nothing.
func TestWriterEnded(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	body := []byte("the body")
	key := artifact.RefOf(body).Hex()
	for _, end := range []string{"commit", "abort"} {
		w, err := s.NewWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
		if end == "commit" {
			err = w.Commit(ctx, key, true)
		} else {
			err = w.Abort()
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := w.(driver.Adopter).Adopt([]byte("more")); err == nil {
			t.Errorf("Adopt after %s succeeded", end)
		}
		if _, err := w.(driver.WrittenComparer).EqualWritten(ctx, key); err == nil {
			t.Errorf("EqualWritten after %s succeeded", end)
		}
	}
	info, err := s.Stat(ctx, key)
	if err != nil || info.Size != int64(len(body)) {
		t.Fatalf("the committed body: %v, %v", info, err)
	}
}
