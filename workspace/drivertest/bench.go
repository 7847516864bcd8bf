package drivertest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// RunBenchmarks runs the workspace benchmarks over the backends open
// returns: Put/{4KiB,64KiB,1MiB} (new bodies), PutExisting/64KiB (a verified
// dedup hit) and ReadVerified/{64KiB,1MiB} (whole bodies).
func RunBenchmarks(b *testing.B, open func(b *testing.B) (driver.Bodies, driver.Records)) {
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		b.Run("Put/"+sizeName(size), func(b *testing.B) { benchPut(b, open, size) })
	}
	b.Run("PutExisting/64KiB", func(b *testing.B) { benchPutExisting(b, open, 64<<10) })
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run("ReadVerified/"+sizeName(size), func(b *testing.B) { benchReadVerified(b, open, size) })
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

func openStore(b *testing.B, open func(b *testing.B) (driver.Bodies, driver.Records)) *workspace.Store {
	b.Helper()
	bo, r := open(b)
	if bo == nil || r == nil {
		b.Fatal("drivertest: open returned a nil driver")
	}
	return workspace.New(bo, r)
}

// benchPut stores a new body per iteration. Bodies are deleted, untimed,
// every 64 MiB so that memory-backed stores stay small.
func benchPut(b *testing.B, open func(b *testing.B) (driver.Bodies, driver.Records), size int) {
	s := openStore(b, open)
	ctx := context.Background()
	data := content(uint64(size), size)
	var stored []artifact.Ref
	var i uint64
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		i++
		binary.LittleEndian.PutUint64(data, i)
		ref, _, res, err := Put(ctx, s, bytes.NewReader(data), nil)
		if err != nil || res != workspace.Created {
			b.Fatalf("Put = %v, %v; want created", res, err)
		}
		stored = append(stored, ref)
		if len(stored)*size >= 64<<20 {
			b.StopTimer()
			deleteAll(b, s, stored)
			stored = stored[:0]
			b.StartTimer()
		}
	}
	deleteAll(b, s, stored)
}

func deleteAll(b *testing.B, s *workspace.Store, refs []artifact.Ref) {
	for _, ref := range refs {
		if err := s.DeleteBody(context.Background(), ref); err != nil {
			b.Fatalf("DeleteBody: %v", err)
		}
	}
}

func benchPutExisting(b *testing.B, open func(b *testing.B) (driver.Bodies, driver.Records), size int) {
	s := openStore(b, open)
	ctx := context.Background()
	data := content(uint64(size), size)
	putOn(b, s, data)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		_, _, res, err := Put(ctx, s, bytes.NewReader(data), nil)
		if err != nil || res != workspace.Existing {
			b.Fatalf("Put = %v, %v; want existing", res, err)
		}
	}
}

func benchReadVerified(b *testing.B, open func(b *testing.B) (driver.Bodies, driver.Records), size int) {
	s := openStore(b, open)
	ctx := context.Background()
	data := content(uint64(size), size)
	ref := putOn(b, s, data)
	n := int64(size)
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		got, err := s.ReadVerified(ctx, ref, n, 0, n)
		if err != nil || int64(len(got)) != n {
			b.Fatalf("ReadVerified = %d bytes, %v", len(got), err)
		}
	}
}
