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

// BenchmarkDecisionPaired alternates, within every iteration, one bare
// durable create and one offload decision of fresh content of the same
// size, timing each, so that both meet the same moments of a shared disk;
// it reports their mean latencies and the ratio (offload / bare).
func BenchmarkDecisionPaired(b *testing.B) {
	for _, bs := range []struct {
		name string
		size int
	}{{"4KiB", 4 << 10}, {"32KiB", 32 << 10}, {"1MiB", 1 << 20}} {
		b.Run(bs.name, func(b *testing.B) {
			off, _ := offloaderOn(b, true)
			bare := newBare(b)
			ctx := context.Background()
			buf, next := benchContent(bs.size)
			call := hybridctx.Call{Tool: "bench", ID: "call"}
			var tOff, tBare time.Duration
			i := 0
			for b.Loop() {
				key := next(i)
				t0 := time.Now()
				bare(key, buf, i)
				t1 := time.Now()
				next(i + 1<<40) // another fresh digest for the offload
				out, err := off.Offload(ctx, call, buf)
				tOff += time.Since(t1)
				tBare += t1.Sub(t0)
				i++
				if err != nil || out.Outcome() != hybridctx.Offloaded {
					b.Fatal(err, out.Outcome())
				}
			}
			b.ReportMetric(float64(tBare.Microseconds())/float64(i), "bare-µs")
			b.ReportMetric(float64(tOff.Microseconds())/float64(i), "offload-µs")
			b.ReportMetric(float64(tOff)/float64(tBare), "offload/bare")
		})
	}
}

// BenchmarkConcurrentPaired runs rounds of offloads from g goroutines on
// two workspaces of one disk, alternately without and with group commit,
// and reports the offloads per second of each and their ratio (on / off).
func BenchmarkConcurrentPaired(b *testing.B) {
	for _, g := range []int{1, 4, 16, 64} {
		b.Run("goroutines="+strconv.Itoa(g), func(b *testing.B) {
			offs := [2]*hybridctx.Offloader{}
			offs[0], _ = offloaderOn(b, false)
			offs[1], _ = offloaderOn(b, true)
			salt := rand.Uint64()
			round := int64(max(4*g, 32))
			var spent [2]time.Duration
			var done [2]int64
			var seq int64
			for b.Loop() {
				for k := range 2 {
					t := time.Now()
					offloadRound(b, offs[k], g, salt, seq, round)
					spent[k] += time.Since(t)
					done[k] += round
					seq += round
				}
			}
			rate := func(k int) float64 { return float64(done[k]) / spent[k].Seconds() }
			b.ReportMetric(rate(0), "off-offloads/s")
			b.ReportMetric(rate(1), "on-offloads/s")
			b.ReportMetric(rate(1)/rate(0), "on/off")
		})
	}
}

// offloadRound offloads bodies from..from+n-1 from g goroutines.
func offloadRound(b *testing.B, off *hybridctx.Offloader, g int, salt uint64, from, n int64) {
	var next atomic.Int64
	next.Store(from)
	var wg sync.WaitGroup
	for w := range g {
		wg.Go(func() {
			buf := make([]byte, 256<<10)
			r := rand.New(rand.NewPCG(salt^uint64(from), uint64(w)))
			for {
				i := next.Add(1) - 1
				if i >= from+n {
					return
				}
				out, err := off.Offload(context.Background(), hybridctx.Call{Tool: "bench", ID: "call"}, workloadBody(r, buf, salt, i))
				if err != nil || out.Outcome() != hybridctx.Offloaded {
					b.Error(err, out.Outcome())
					return
				}
			}
		})
	}
	wg.Wait()
}
