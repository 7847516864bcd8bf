package hybridctx_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

func BenchmarkInlineDecision(b *testing.B) {
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(ownerA, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4096}, nil)
	result := strings.Repeat("r", 4096)
	call := hybridctx.Call{Tool: "t", ID: "c"}
	run := func(b *testing.B, ctx context.Context) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := off.Offload(ctx, call, result)
			if err != nil || out.Outcome() != hybridctx.Inline {
				b.Fatal(err)
			}
		}
	}
	b.Run("no-reporter", func(b *testing.B) { run(b, context.Background()) })
	b.Run("reporter", func(b *testing.B) {
		rep := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "r", AgentID: "a",
			Sinks: []hybridctx.Sink{hybridctx.SinkFunc(func(context.Context, *hybridctx.Event) error { return nil })}})
		run(b, hybridctx.WithReporter(context.Background(), rep))
	})
}

func randomBody(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

var sizes = []struct {
	name string
	n    int
}{{"1MiB", 1 << 20}, {"64MiB", 64 << 20}}

// shmDir is a tmpfs directory, where the directory backend's fsync costs
// next to nothing: benchmarks there measure everything but the disk.
const shmDir = "/dev/shm"

// backends are the workspaces the large-body benchmarks run on: memory, a
// directory on tmpfs (when the machine has one) and a directory on the
// temporary directory's file system, fsync included.
func backends(b *testing.B) []struct {
	name string
	open func(b *testing.B) *workspace.Store
} {
	dir := func(root func(b *testing.B) string) func(b *testing.B) *workspace.Store {
		return func(b *testing.B) *workspace.Store {
			d, err := dirstore.Open(context.Background(), root(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { d.Close() })
			return workspace.New(d, d)
		}
	}
	all := []struct {
		name string
		open func(b *testing.B) *workspace.Store
	}{
		{"mem", func(b *testing.B) *workspace.Store { m := memstore.New(); return workspace.New(m, m) }},
		{"shm", dir(func(b *testing.B) string {
			d, err := os.MkdirTemp(shmDir, "hybridctx-bench-")
			if err != nil {
				b.Skip("no tmpfs:", err)
			}
			b.Cleanup(func() { os.RemoveAll(d) })
			return d
		})},
		{"dir", dir(func(b *testing.B) string { return b.TempDir() })},
	}
	return all
}

// BenchmarkOffload stores fresh content each iteration (a new owner record
// and a new body), streamed from a reader ("reader") or passed as bytes
// ("bytes", the form tool middleware passes).
func BenchmarkOffload(b *testing.B) {
	for _, be := range backends(b) {
		for _, sz := range sizes {
			for _, form := range []string{"reader", "bytes"} {
				b.Run(be.name+"/"+sz.name+"/"+form, func(b *testing.B) {
					store := be.open(b)
					bind, _ := hybridctx.NewBinding(ownerA, store)
					off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4096}, nil)
					body := randomBody(sz.n)
					call := hybridctx.Call{Tool: "t", ID: "c"}
					b.SetBytes(int64(sz.n))
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						i++
						copy(body, fmt.Sprintf("%016d", i)) // fresh digest each time
						var out *hybridctx.OffloadResult
						var err error
						if form == "reader" {
							out, err = off.OffloadReader(context.Background(), call, bytes.NewReader(body))
						} else {
							out, err = off.Offload(context.Background(), call, body)
						}
						if err != nil || out.Outcome() != hybridctx.Offloaded {
							b.Fatal(err, out.Outcome())
						}
						// Keep the workspace small: memory and tmpfs would
						// otherwise fill up over a long run.
						_ = store.DeleteBody(context.Background(), out.Ref)
					}
				})
			}
		}
	}
}

// BenchmarkRehydrate reads a whole body back, verified, into memory and
// streamed to a writer.
func BenchmarkRehydrate(b *testing.B) {
	for _, be := range backends(b) {
		for _, sz := range sizes {
			b.Run(be.name+"/"+sz.name, func(b *testing.B) {
				store := be.open(b)
				bind, _ := hybridctx.NewBinding(ownerA, store)
				off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4096}, nil)
				reh, _ := hybridctx.NewRehydrator(bind, nil)
				body := randomBody(sz.n)
				out, err := off.Offload(context.Background(), hybridctx.Call{Tool: "t", ID: "c"}, body)
				if err != nil {
					b.Fatal(err)
				}
				req := hybridctx.Request{Reference: out.Ref.String(), Budget: int64(sz.n)}
				b.SetBytes(int64(sz.n))
				b.ReportAllocs()
				b.Run("memory", func(b *testing.B) {
					b.SetBytes(int64(sz.n))
					b.ReportAllocs()
					for b.Loop() {
						rh, err := reh.Rehydrate(context.Background(), req)
						if err != nil || rh.Outcome() != hybridctx.Resolved {
							b.Fatal(err)
						}
					}
				})
				b.Run("stream", func(b *testing.B) {
					b.SetBytes(int64(sz.n))
					b.ReportAllocs()
					for b.Loop() {
						rh, err := reh.RehydrateTo(context.Background(), req, io.Discard)
						if err != nil || rh.Outcome() != hybridctx.Resolved {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}

// BenchmarkSHA256 is the physical bound the two benchmarks above are
// compared with.
func BenchmarkSHA256(b *testing.B) {
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			body := randomBody(sz.n)
			b.SetBytes(int64(sz.n))
			for b.Loop() {
				_ = artifact.RefFromSum(sha256.Sum256(body))
			}
		})
	}
}
