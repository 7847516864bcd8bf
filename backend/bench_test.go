package backend_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/blobstore/blobtest"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/pgstore/pgtest"
)

// Benchmarks against the real servers (run with HYBRIDCTX_TEST_POSTGRES and
// HYBRIDCTX_TEST_S3 set, as .ci/services.sh does):
//
//	go test -run '^$' -bench . -benchmem ./backend/
//
// dir is the embedded directory backend, for comparison.

var benchSizes = []int{4 << 10, 1 << 20, 64 << 20}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// benchURL returns a fresh workspace URL of the named backend.
func benchURL(b *testing.B, name string) string {
	switch name {
	case "dir":
		return filepath.Join(b.TempDir(), "ws")
	case "postgres":
		return pgtest.NewSchema(b)
	case "s3":
		return s3URL(blobtest.NewPrefix(b), pgtest.NewSchema(b))
	}
	b.Fatalf("unknown backend %s", name)
	return ""
}

type benchClient struct {
	store *workspace.Store
	off   *hybridctx.Offloader
	reh   *hybridctx.Rehydrator
}

// client opens its own Store on u, as one worker process would.
func client(b testing.TB, u string) *benchClient {
	b.Helper()
	s, err := backend.Open(context.Background(), u, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	bind, _ := hybridctx.NewBinding(owner("bench"), s)
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 1024}, nil)
	if err != nil {
		b.Fatal(err)
	}
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	return &benchClient{store: s, off: off, reh: reh}
}

// clear deletes every record and body, so that stored bytes stay bounded.
func (c *benchClient) clear(b *testing.B) {
	ctx := context.Background()
	for rec, err := range c.store.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			b.Fatal(err)
		}
		if err := c.store.DeleteRecord(ctx, rec.Owner, rec.Ref); err != nil {
			b.Fatal(err)
		}
	}
	for info, err := range c.store.ListBodies(ctx) {
		if err != nil {
			b.Fatal(err)
		}
		ref, _ := artifact.ParseDigest(info.Key)
		if err := c.store.DeleteBody(ctx, ref); err != nil {
			b.Fatal(err)
		}
	}
}

// offloadNew offloads data made distinct by n, and checks it was stored.
func (c *benchClient) offloadNew(b *testing.B, data []byte, n uint64) bool {
	binary.LittleEndian.PutUint64(data, n)
	out, err := c.off.Offload(context.Background(), hybridctx.Call{Tool: "bench", ID: "c"}, data)
	if err != nil || out.Outcome() != hybridctx.Offloaded {
		b.Errorf("Offload = %v, %v", out.Outcome(), err)
		return false
	}
	return true
}

func hybridctxRef(data []byte) string { return artifact.RefOf(data).String() }

// BenchmarkOffload offloads new content of each size on each backend.
func BenchmarkOffload(b *testing.B) {
	for _, be := range []string{"dir", "postgres", "s3"} {
		for _, size := range benchSizes {
			b.Run(be+"/"+sizeName(size), func(b *testing.B) {
				c := client(b, benchURL(b, be))
				data := payload{Seed: uint64(size), Size: size}.bytes()
				var n, stored uint64
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					n++
					if !c.offloadNew(b, data, n) {
						b.FailNow()
					}
					if stored += uint64(size); stored >= 256<<20 {
						b.StopTimer()
						c.clear(b)
						stored = 0
						b.StartTimer()
					}
				}
			})
		}
	}
}

// BenchmarkRehydrate rehydrates a whole stored body of each size, verified.
func BenchmarkRehydrate(b *testing.B) {
	for _, be := range []string{"dir", "postgres", "s3"} {
		for _, size := range benchSizes {
			b.Run(be+"/"+sizeName(size), func(b *testing.B) {
				c := client(b, benchURL(b, be))
				data := payload{Seed: uint64(size), Size: size}.bytes()
				if !c.offloadNew(b, data, 1) {
					b.FailNow()
				}
				req := hybridctx.Request{Reference: hybridctxRef(data), Budget: int64(size)}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					rh, err := c.reh.Rehydrate(context.Background(), req)
					if err != nil || rh.Outcome() != hybridctx.Resolved || len(rh.Segment.Bytes()) != size {
						b.Fatalf("Rehydrate = %v, %v", rh.Outcome(), err)
					}
				}
			})
		}
	}
}

// BenchmarkWorkers runs 1 and 4 concurrent workers, each with its own
// Store (connection pool, S3 client), offloading or rehydrating 1 MiB
// bodies; the figure is the aggregate throughput.
func BenchmarkWorkers(b *testing.B) {
	const size = 1 << 20
	for _, be := range []string{"postgres", "s3"} {
		for _, op := range []string{"offload", "rehydrate"} {
			for _, workers := range []int{1, 4} {
				b.Run(fmt.Sprintf("%s/%s/%d", be, op, workers), func(b *testing.B) {
					u := benchURL(b, be)
					clients := make([]*benchClient, workers)
					datas := make([][]byte, workers)
					for i := range clients {
						clients[i] = client(b, u)
						datas[i] = payload{Seed: uint64(i + 1), Size: size}.bytes()
						binary.LittleEndian.PutUint64(datas[i][8:], uint64(i))
						if op == "rehydrate" && !clients[i].offloadNew(b, datas[i], 0) {
							b.FailNow()
						}
					}
					var next atomic.Uint64
					b.SetBytes(size)
					b.ReportAllocs()
					b.ResetTimer()
					var wg sync.WaitGroup
					for i, c := range clients {
						wg.Go(func() {
							data := datas[i]
							req := hybridctx.Request{Reference: hybridctxRef(data), Budget: size}
							for k := next.Add(1); k <= uint64(b.N); k = next.Add(1) {
								if op == "offload" {
									if !c.offloadNew(b, data, k+1) {
										return
									}
									continue
								}
								rh, err := c.reh.Rehydrate(context.Background(), req)
								if err != nil || rh.Outcome() != hybridctx.Resolved {
									b.Errorf("Rehydrate = %v, %v", rh.Outcome(), err)
									return
								}
							}
						})
					}
					wg.Wait()
				})
			}
		}
	}
}
