package hybridctx_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

var (
	floor64    = flag.Bool("floor64", false, "BenchmarkFloor: add 64 MiB bodies")
	floorDir   = flag.String("floordir", "", "BenchmarkFloor: use a directory workspace under this directory (/dev/shm: tmpfs) instead of mem://")
	floorKeep  = flag.Bool("floorkeep", false, "BenchmarkFloor: keep every fresh body, as a workspace does, instead of deleting it (memory grows by every iteration's bytes)")
	floorSizes = flag.String("floorsizes", "", "BenchmarkFloor: body sizes in KiB, comma-separated, instead of 4,32,128,1024")
)

// BenchmarkFloor measures one offload decision against the SHA-256 of its
// own bytes, timed in the same iteration so that both see the same load:
// by size, content kind (text, json, binary), input form ([]byte, string,
// json.RawMessage, io.Reader) and case ("fresh": a new body and record;
// "reuse": the owner's record and body exist, existing_reference). The
// metrics are the median and the best of offload time / SHA-256 time
// ("x-sha-med", "x-sha-best"); docs/figures.md's floor is 1.0. ns/op counts both
// timings. A fresh body is deleted again, so that the memory backend
// copies the next one into memory the runtime reuses; -floorkeep keeps
// them, as a workspace does, so that it copies into memory the process has
// not touched before (a page fault for every 4 KiB). -floorsizes sets the
// sizes in KiB; -floor64 adds 64 MiB bodies; -floordir DIR runs on a
// directory workspace in a new directory under DIR (on tmpfs, /dev/shm,
// its fsyncs cost next to nothing) instead of mem://.
func BenchmarkFloor(b *testing.B) {
	sz := []int{4 << 10, 32 << 10, 128 << 10, 1 << 20}
	if *floorSizes != "" {
		sz = sz[:0]
		for f := range strings.SplitSeq(*floorSizes, ",") {
			k, err := strconv.Atoi(f)
			if err != nil || k <= 0 {
				b.Fatalf("-floorsizes: %q is not a size in KiB", f)
			}
			sz = append(sz, k<<10)
		}
	}
	if *floor64 {
		sz = append(sz, 64<<20)
	}
	for _, n := range sz {
		for _, kind := range []string{"text", "json", "binary"} {
			for _, form := range []string{"bytes", "string", "raw", "reader"} {
				for _, reuse := range []bool{false, true} {
					name := sizeName(n) + "/" + kind + "/" + form + "/" + map[bool]string{false: "fresh", true: "reuse"}[reuse]
					b.Run(name, func(b *testing.B) { floor(b, n, kind, form, reuse) })
				}
			}
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + "MiB"
	}
	return strconv.Itoa(n>>10) + "KiB"
}

func floor(b *testing.B, n int, kind, form string, reuse bool) {
	ctx := context.Background()
	store := floorStore(b)
	bind, _ := hybridctx.NewBinding(ownerA, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 1024}, nil)
	call := hybridctx.Call{Tool: "t", ID: "c"}
	var body []byte
	switch kind {
	case "json":
		body = jsonBody(n)
	case "text":
		body = textBody(n)
	default:
		body = randomBody(n)
	}
	want := hybridctx.Offloaded
	if reuse {
		want = hybridctx.ExistingReference
	}
	run := func(in any) (*hybridctx.OffloadResult, error) {
		if r, ok := in.(*bytes.Reader); ok {
			return off.OffloadReader(ctx, call, r)
		}
		return off.Offload(ctx, call, in)
	}
	input := func() any {
		switch form {
		case "string":
			return string(body)
		case "raw":
			return json.RawMessage(body)
		case "reader":
			return bytes.NewReader(body)
		}
		return body
	}
	if reuse {
		if _, err := run(input()); err != nil {
			b.Fatal(err)
		}
	}
	if *floorKeep {
		// Return what earlier benchmarks freed, so that this one's bodies
		// land in memory the process has not touched, as a growing
		// workspace's do.
		debug.FreeOSMemory()
	}
	var shaT, offT []time.Duration
	var ratios []float64
	i := 0
	for b.Loop() {
		i++
		if !reuse {
			mark(body, "f", i, kind == "json")
		}
		in := input()
		t0 := time.Now()
		_ = sha256.Sum256(body)
		sha := time.Since(t0)
		t0 = time.Now()
		out, err := run(in)
		d := time.Since(t0)
		if err != nil || out.Outcome() != want {
			b.Fatal(err, out.Outcome())
		}
		if !bytes.Contains([]byte(out.Notice), []byte(" lines, "+kind+";")) {
			b.Fatalf("the %s body was classified otherwise: %s", kind, out.Notice)
		}
		if !reuse && !*floorKeep {
			_ = store.DeleteBody(ctx, out.Ref)
		}
		shaT, offT = append(shaT, sha), append(offT, d)
		ratios = append(ratios, float64(d)/float64(sha))
	}
	b.ReportMetric(median(ratios), "x-sha-med")
	b.ReportMetric(float64(slices.Min(offT))/float64(slices.Min(shaT)), "x-sha-best")
}

// floorStore opens BenchmarkFloor's workspace: mem://, or a directory
// workspace under -floordir, removed afterwards.
func floorStore(b *testing.B) *workspace.Store {
	if *floorDir == "" {
		m := memstore.New()
		return workspace.New(m, m)
	}
	dir, err := os.MkdirTemp(*floorDir, "hybridctx-floor-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	d, err := dirstore.Open(context.Background(), dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return workspace.New(d, d)
}
