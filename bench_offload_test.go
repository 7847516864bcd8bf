package hybridctx_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/cputime"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// BenchmarkOffloadResult is the time and memory of one stored decision on
// mem://, by content kind (log-like text, JSON), size, input form ([]byte,
// string, io.Reader) and case: "fresh" stores a new body and record (both
// deleted again after the decision, so that the next one is fresh too),
// "reuse" finds the owner's record and body (existing_reference).
// cpu-ns/op is the process's CPU time per decision (every goroutine's,
// the collector's included): on a machine other work keeps busy it moves
// less than the wall time. These
// are the figures BENCHMARKS.md's "Speed code and its figures" cites: each
// piece of code that is there for speed alone is kept only while it moves
// one of them by 10% or more.
func BenchmarkOffloadResult(b *testing.B) {
	for _, kind := range []string{"text", "json"} {
		for _, kib := range []int{4, 16, 32, 64, 128, 256, 1024} {
			for _, form := range []string{"bytes", "string", "reader"} {
				for _, reuse := range []bool{false, true} {
					name := kind + "/" + sizeName(kib<<10) + "/" + form + "/" + map[bool]string{false: "fresh", true: "reuse"}[reuse]
					b.Run(name, func(b *testing.B) { offloadResult(b, kind, kib<<10, form, reuse) })
				}
			}
		}
	}
}

func offloadResult(b *testing.B, kind string, n int, form string, reuse bool) {
	ctx := context.Background()
	m := memstore.New()
	store := workspace.New(m, m)
	bind, err := hybridctx.NewBinding(ownerA, store)
	if err != nil {
		b.Fatal(err)
	}
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 1024}, nil)
	if err != nil {
		b.Fatal(err)
	}
	call := hybridctx.Call{Tool: "t", ID: "c"}
	body := textBody(n)
	if kind == "json" {
		body = jsonBody(n)
	}
	var in any = body
	r := bytes.NewReader(body)
	switch form {
	case "string":
		in = string(body)
	case "reader":
		in = r
	}
	want := hybridctx.Offloaded
	if reuse {
		want = hybridctx.ExistingReference
		if _, err := off.Offload(ctx, call, body); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	cpu := cputime.Used()
	for b.Loop() {
		r.Reset(body)
		out, err := off.Offload(ctx, call, in)
		if err != nil || out.Outcome() != want {
			b.Fatal(err, out.Outcome())
		}
		if !reuse {
			_ = store.DeleteBody(ctx, out.Ref)
			_ = store.DeleteRecord(ctx, ownerA, out.Ref)
		}
	}
	b.ReportMetric(float64(cputime.Used()-cpu)/float64(b.N), "cpu-ns/op")
}
