package memstore_test

import (
	"testing"

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
