package hybridctx_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/hybridctx/hybridctx"
)

// TestViewMemoryBounded: lines and search over a 32 MiB stored log allocate
// a small fraction of the body, whatever it holds (docs/rehydration.md: memory is the
// budget plus one capped line, never the body). The body streams from the
// store through the hash and the scan.
func TestViewMemoryBounded(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("32 MiB body; allocation counts are meaningless under -race")
	}
	e := newEnv(t, 1024)
	var log bytes.Buffer
	for i := 0; log.Len() < 32<<20; i++ {
		fmt.Fprintf(&log, "%08d INFO request served in %d ms\n", i, i%97)
	}
	log.WriteString("ERROR the needle\n")
	out, err := e.off.OffloadReader(e.ctx, hybridctx.Call{Tool: "t", ID: "c"}, bytes.NewReader(log.Bytes()))
	if err != nil || out.Outcome() != hybridctx.Offloaded {
		t.Fatalf("offload: %v %v", out, err)
	}
	ref, size := out.Ref.String(), uint64(log.Len())
	log = bytes.Buffer{}
	views := map[string]func() (*hybridctx.Rehydration, error){
		"search": func() (*hybridctx.Rehydration, error) {
			return e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 4096, Pattern: "needle"})
		},
		"search regex": func() (*hybridctx.Rehydration, error) {
			return e.reh.Search(e.ctx, hybridctx.SearchRequest{Reference: ref, Budget: 4096, Pattern: `ERROR \w+`, Regex: true})
		},
		"lines": func() (*hybridctx.Rehydration, error) {
			return e.reh.ReadLines(e.ctx, hybridctx.LinesRequest{Reference: ref, Budget: 4096, StartLine: 500000, LineCount: 50})
		},
	}
	for name, run := range views {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r, err := run()
		runtime.ReadMemStats(&after)
		if err != nil || r.Outcome() != hybridctx.Resolved {
			t.Fatalf("%s: %v %v", name, r, err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		if alloc > size/8 {
			t.Errorf("%s over a %d-byte body allocated %d bytes", name, size, alloc)
		}
	}
}
