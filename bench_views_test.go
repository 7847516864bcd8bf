package hybridctx_test

import (
	"context"
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// BenchmarkViews measures the targeted views (docs/rehydration.md, docs/figures.md) on a 64 MiB log
// (a 64 MiB JSON document for query) in the memory workspace, each as a
// share of raw SHA-256 of the same bytes timed in the same iteration
// ("-%sha-med": the median paired ratio; "-%sha-best": fastest over
// fastest). Run with a fixed count, e.g. -benchtime 10x -benchmem.
func BenchmarkViews(b *testing.B) {
	const n = 64 << 20
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(ownerA, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4096}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, &hybridctx.RehydratorOptions{QueryTimeout: time.Minute})
	log := textBody(n)
	copy(log[n-200:], "\nERROR token-4f2a: disk full\n")
	logRef := mustOffload(b, off, ctx, log).Ref.String()
	doc := jsonBody(n)
	docRef := mustOffload(b, off, ctx, doc).Ref.String()
	const budget = 4096
	views := []struct {
		name string
		body []byte
		run  func() (*hybridctx.Rehydration, error)
	}{
		{"lines", log, func() (*hybridctx.Rehydration, error) {
			return reh.ReadLines(ctx, hybridctx.LinesRequest{Reference: logRef, Budget: budget, StartLine: 400000, LineCount: 20})
		}},
		{"search-literal", log, func() (*hybridctx.Rehydration, error) {
			return reh.Search(ctx, hybridctx.SearchRequest{Reference: logRef, Budget: budget, Pattern: "token-4f2a"})
		}},
		{"search-literal-context", log, func() (*hybridctx.Rehydration, error) {
			return reh.Search(ctx, hybridctx.SearchRequest{Reference: logRef, Budget: budget, Pattern: "token-4f2a", ContextLines: 2})
		}},
		{"search-ignore-case", log, func() (*hybridctx.Rehydration, error) {
			return reh.Search(ctx, hybridctx.SearchRequest{Reference: logRef, Budget: budget, Pattern: "TOKEN-4F2A", IgnoreCase: true})
		}},
		{"search-regex", log, func() (*hybridctx.Rehydration, error) {
			return reh.Search(ctx, hybridctx.SearchRequest{Reference: logRef, Budget: budget, Pattern: `token-[0-9a-f]{4}`, Regex: true})
		}},
		{"query", doc, func() (*hybridctx.Rehydration, error) {
			return reh.Query(ctx, hybridctx.QueryRequest{Reference: docRef, Budget: budget, Filter: `.[1000].name`})
		}},
	}
	for _, v := range views {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(n)
			b.ReportAllocs()
			var ratios []float64
			var shaT, opT []time.Duration
			for b.Loop() {
				t0 := time.Now()
				_ = sha256.Sum256(v.body)
				sha := time.Since(t0)
				t1 := time.Now()
				if err := resolved(v.run()); err != nil {
					b.Fatal(err)
				}
				d := time.Since(t1)
				shaT, opT = append(shaT, sha), append(opT, d)
				ratios = append(ratios, 100*float64(sha)/float64(d))
			}
			b.ReportMetric(median(ratios), "%sha-med")
			b.ReportMetric(100*float64(slices.Min(shaT))/float64(slices.Min(opT)), "%sha-best")
		})
	}
}
