package dirstore_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
)

// offloaderOn returns an Offloader bound to a fresh durable directory
// workspace in the temporary directory (fsync included), with a threshold
// below every benchmark body so that each decision offloads.
func offloaderOn(b *testing.B, group bool) (*hybridctx.Offloader, *workspace.Store) {
	b.Helper()
	var o dirstore.Options
	if !group {
		dirstore.WithoutGroupCommit(&o)
	}
	s, err := dirstore.Open(context.Background(), filepath.Join(b.TempDir(), "ws"), &o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	store := workspace.New(s, s)
	bind, err := hybridctx.NewBinding(testOwner, store)
	if err != nil {
		b.Fatal(err)
	}
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 512}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return off, store
}

// BenchmarkDecision compares, in one run and on the same file system, one
// offload decision of fresh content through the public API ("offload":
// hash, record lookup, durable body create, durable record commit) with the
// bare durable create of the same bytes ("bare": temp file, write, fsync,
// link, directory fsync, unlink; see BenchmarkBareCreate). Compare the
// columns with `benchstat -col /path`.
func BenchmarkDecision(b *testing.B) {
	for _, bs := range []struct {
		name string
		size int
	}{{"4KiB", 4 << 10}, {"32KiB", 32 << 10}, {"1MiB", 1 << 20}} {
		b.Run("size="+bs.name+"/path=bare", func(b *testing.B) { bareCreate(b, bs.size) })
		b.Run("size="+bs.name+"/path=offload", func(b *testing.B) {
			off, _ := offloaderOn(b, true)
			ctx := context.Background()
			buf, next := benchContent(bs.size)
			call := hybridctx.Call{Tool: "bench", ID: "call"}
			b.SetBytes(int64(bs.size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				next(i) // stamps i into buf: a fresh digest
				i++
				out, err := off.Offload(ctx, call, buf)
				if err != nil || out.Outcome() != hybridctx.Offloaded {
					b.Fatal(err, out.Outcome())
				}
			}
		})
	}
}

// BenchmarkConcurrentOffload runs offload decisions of distinct bodies from
// a fixed number of goroutines through one Offloader on one durable
// directory workspace, and reports offloads per second, with group commit
// ("group=on") and without ("group=off": one body-directory fsync per
// Commit, one transaction per record), one after the other so that both
// meet the same disk. Body sizes are log-normal with a median of 8 KiB
// (clamped to 1 KiB–256 KiB), the shared workload's shape. Compare with
// `benchstat -col /group`.
func BenchmarkConcurrentOffload(b *testing.B) {
	for _, g := range []int{1, 4, 16, 64} {
		for _, group := range []string{"off", "on"} {
			b.Run("goroutines="+strconv.Itoa(g)+"/group="+group, func(b *testing.B) {
				concurrentOffloads(b, g, group == "on")
			})
		}
	}
}

// concurrentOffloads runs b.N offloads from g goroutines.
func concurrentOffloads(b *testing.B, g int, group bool) {
	off, _ := offloaderOn(b, group)
	ctx := context.Background()
	call := hybridctx.Call{Tool: "bench", ID: "call"}
	salt := rand.Uint64()
	var next, total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, g)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for w := range g {
		wg.Go(func() {
			buf := make([]byte, 256<<10)
			r := rand.New(rand.NewPCG(salt, uint64(w)))
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				body := workloadBody(r, buf, salt, i)
				total.Add(int64(len(body)))
				out, err := off.Offload(ctx, call, body)
				if err == nil && out.Outcome() != hybridctx.Offloaded {
					err = errOutcome(out.Outcome())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "offloads/s")
	b.ReportMetric(float64(total.Load())/float64(b.N), "B/offload")
}

type errOutcome hybridctx.Outcome

func (e errOutcome) Error() string { return "outcome " + hybridctx.Outcome(e).String() }

// workloadBody fills a prefix of buf with random bytes of a log-normal size
// (median 8 KiB, clamped to 1 KiB–256 KiB), stamped with salt and i so
// that every body of a run is distinct, and returns it.
func workloadBody(r *rand.Rand, buf []byte, salt uint64, i int64) []byte {
	n := int(math.Round(8192 * math.Exp(r.NormFloat64())))
	n = min(max(n, 1<<10), len(buf))
	body := buf[:n]
	for j := 16; j+8 <= n; j += 8 {
		binary.LittleEndian.PutUint64(body[j:], r.Uint64())
	}
	binary.LittleEndian.PutUint64(body, salt)
	binary.LittleEndian.PutUint64(body[8:], uint64(i))
	return body
}
