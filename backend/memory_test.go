package backend_test

import (
	"context"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
)

// generator yields n pseudo-random bytes without holding them.
type generator struct {
	r *rand.ChaCha8
	n int64
}

func (g *generator) Read(p []byte) (int, error) {
	if g.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.n)]
	_, _ = g.r.Read(p)
	g.n -= int64(len(p))
	return len(p), nil
}

// peakHeap samples the heap in use while f runs and returns its peak above
// the level before f.
func peakHeap(f func()) uint64 {
	// Collect garbage early, so that the peak reflects what is live.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

// TestLargeBodiesStream offloads and rehydrates (to a writer) a 128 MiB
// stream on each distributed backend: the heap grows by at most half the
// body's size (three quarters under -race), so nothing buffers the body
// whole (a writer that did would grow it by more than the body).
func TestLargeBodiesStream(t *testing.T) {
	// The bound leaves room for garbage not yet collected and for the S3
	// SDK, which reads up to its 16 MiB multipart threshold before it
	// starts an upload, then keeps a few 5 MiB parts in flight.
	const size = int64(128 << 20)
	bound := uint64(64 << 20)
	if raceEnabled {
		bound = 96 << 20
	}
	for _, d := range distributedBackends(t) {
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			c := client(t, d.url)
			var out *hybridctx.OffloadResult
			var err error
			grew := peakHeap(func() {
				out, err = c.off.OffloadReader(ctx, hybridctx.Call{Tool: "dump", ID: "1"},
					&generator{r: rand.NewChaCha8([32]byte{1}), n: size})
			})
			if err != nil || out.Outcome() != hybridctx.Offloaded {
				t.Fatalf("OffloadReader = %v, %v", out.Outcome(), err)
			}
			t.Logf("offload of %d MiB: heap grew %.1f MiB", size>>20, float64(grew)/(1<<20))
			if grew > bound {
				t.Errorf("offload heap grew %d MiB for a %d MiB body", grew>>20, size>>20)
			}
			var n countingWriter
			grew = peakHeap(func() {
				var rh *hybridctx.Rehydration
				rh, err = c.reh.RehydrateTo(ctx, hybridctx.Request{Reference: out.Ref.String(), Budget: size}, &n)
				if err == nil && rh.Outcome() != hybridctx.Resolved {
					t.Errorf("RehydrateTo = %v", rh.Outcome())
				}
			})
			if err != nil || int64(n) != size {
				t.Fatalf("RehydrateTo wrote %d bytes, %v", n, err)
			}
			t.Logf("streamed rehydration of %d MiB: heap grew %.1f MiB", size>>20, float64(grew)/(1<<20))
			if grew > bound {
				t.Errorf("rehydration heap grew %d MiB for a %d MiB body", grew>>20, size>>20)
			}
		})
	}
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
