package hybridctx_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/procstat"
)

// The process-memory figure of the query view: N queries over one large
// document at once, through one shared limiter of the defaults, in a
// child process (this test binary re-executed) whose peak resident size
// is read from /proc. Linux only.
const queryMemEnv = "HYBRIDCTX_QUERY_PROCESS_MEMORY"

// TestQueryProcessMemory runs TestQueryProcessMemoryChild for N = 1, 16
// and 128 heavy queries at once: the peak resident size stays within
// DefaultQueryProcessBytes plus the document and the process's own, flat
// beyond the limiter's concurrency.
func TestQueryProcessMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a memory figure: not in -short or under -race")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc here")
	}
	for _, n := range []int{1, 16, 128} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestQueryProcessMemoryChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), queryMemEnv+"="+strconv.Itoa(n))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("N=%d: %v\n%s", n, err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "peak") {
				t.Log(strings.TrimSpace(l))
			}
		}
	}
}

func TestQueryProcessMemoryChild(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(queryMemEnv))
	if n == 0 {
		t.Skip(queryMemEnv + " unset: run by its parent test")
	}
	e := newEnv(t, 4)
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; b.Len() < hybridctx.DefaultQueryMaxBytes/4; i++ {
		fmt.Fprintf(&b, `{"id":%d,"name":"item %d","tags":["a","b"],"ok":true},`, i, i)
	}
	b.WriteString("{}]")
	// half the queries decode a document near the bound, half build
	// values up to it with a small one
	big := stored(t, e, b.String()).String()
	small := stored(t, e, `{"a":1}`).String()
	b.Reset()
	runtime.GC()
	debug.FreeOSMemory()
	base := status(t, "VmRSS")
	lim, err := hybridctx.NewQueryLimiter(0, time.Hour) // the default concurrency; busy only when the queue is full
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		reh, err := hybridctx.NewRehydrator(e.bind, &hybridctx.RehydratorOptions{QueryLimiter: lim})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			req := hybridctx.QueryRequest{Reference: big, Budget: 1000, Filter: `[.[] | tostring | length] | add`}
			if i%2 == 1 {
				req = hybridctx.QueryRequest{Reference: small, Budget: 1000, Filter: `[range(1e8) | tostring] | length`}
			}
			rh, err := reh.Query(e.ctx, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				outcomes[err.Error()]++
				return
			}
			outcomes[rh.Outcome().String()+"/"+rh.Reason().String()]++
		})
	}
	wg.Wait()
	peak := status(t, "VmHWM")
	t.Logf("N=%d: peak RSS %d MiB (%d MiB before the queries), %v, outcomes %v",
		n, peak>>20, base>>20, time.Since(start).Round(time.Millisecond), outcomes)
	if peak > 512<<20 {
		t.Errorf("N=%d: peak RSS %d MiB, over 512 MiB", n, peak>>20)
	}
}

// status reads a size field of this process's /proc status, in bytes.
func status(t *testing.T, field string) int64 {
	t.Helper()
	n, err := procstat.Bytes(0, field)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// BenchmarkQuerySmall is one query decision over a small document: the
// latency a re-executed child per query would add to (docs/rehydration.md
// compares them).
func BenchmarkQuerySmall(b *testing.B) {
	e := newEnv(b, 4)
	out := mustOffload(b, e.off, e.ctx, `{"items":[{"id":1,"name":"a"},{"id":2,"name":"b"}],"total":2}`)
	req := hybridctx.QueryRequest{Reference: out.Ref.String(), Budget: 4096, Filter: ".items[] | select(.id == 2) | .name"}
	b.ReportAllocs()
	for b.Loop() {
		if rh, err := e.reh.Query(e.ctx, req); err != nil || rh.Outcome() != hybridctx.Resolved {
			b.Fatal(err)
		}
	}
}
