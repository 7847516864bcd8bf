package hybridctx_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/readtools"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

// TestQueryBusy: a query that finds every slot of its limiter taken for
// the limiter's wait is view_failed/busy, with one event, only once its
// body's digest verified (a tampered body is stale, not busy); once a slot
// frees, the same query resolves; a caller that gives up while waiting
// gets its context's error and no decision.
func TestQueryBusy(t *testing.T) {
	e := newEnv(t, 4)
	lim, err := hybridctx.NewQueryLimiter(1, time.Millisecond)
	if err != nil || lim.Concurrency() != 1 {
		t.Fatal(err)
	}
	reh, err := hybridctx.NewRehydrator(e.bind, &hybridctx.RehydratorOptions{QueryLimiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"a":[1,2,3]}`
	ref := stored(t, e, body)
	req := hybridctx.QueryRequest{Reference: ref.String(), Budget: 100, Filter: ".a[1]"}
	release := hybridctx.HoldQuerySlot(lim)
	n := len(e.events.all())
	rh := mustView(t)(reh.Query(e.ctx, req))
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.ViewFailed, hybridctx.Busy)
	oneEvent(t, e, n, rh, hybridctx.ViewQuery)
	if rh.Segment != nil {
		t.Fatal("busy released an answer")
	}
	set, err := readtools.New(reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Refusal(rh, 100); got != "hybridctx: view_failed (busy): too many queries are running at once; try again shortly, or use search_artifact." {
		t.Fatalf("busy refusal: %q", got)
	}
	// lines and search take no slot
	if rh := mustView(t)(reh.ReadLines(e.ctx, hybridctx.LinesRequest{Reference: ref.String(), Budget: 100, StartLine: 1})); rh.Outcome() != hybridctx.Resolved {
		t.Fatalf("lines beside a full limiter: %v", rh.Outcome())
	}
	// a caller that gives up while it waits: no decision
	slow, _ := hybridctx.NewQueryLimiter(1, time.Hour)
	waiting, _ := hybridctx.NewRehydrator(e.bind, &hybridctx.RehydratorOptions{QueryLimiter: slow})
	hold := hybridctx.HoldQuerySlot(slow)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	n = len(e.events.all())
	if _, err := waiting.Query(ctx, req); !errors.Is(err, context.Canceled) || len(e.events.all()) != n {
		t.Fatalf("canceled wait: %v, %d events", err, len(e.events.all())-n)
	}
	hold()
	release()
	rh = mustView(t)(reh.Query(e.ctx, req))
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.Resolved, hybridctx.DigestVerified)
	// busy is decided after the digest check
	release = hybridctx.HoldQuerySlot(lim)
	defer release()
	if !drivertest.Overwrite(e.mem, ref.Hex(), []byte(strings.ToUpper(body))) {
		t.Fatal("tamper")
	}
	rh = mustView(t)(reh.Query(e.ctx, req))
	expect(t, rh.Outcome(), rh.Reason(), hybridctx.Stale, hybridctx.DigestMismatch)
	if _, err := hybridctx.NewQueryLimiter(-1, 0); !errors.Is(err, hybridctx.ErrInvalidRequest) {
		t.Fatal("negative concurrency accepted")
	}
}

// TestLightQueryBesideHeavyOnes: sixteen sessions (Rehydrators) share one
// limiter; fifteen run filters that build tens of megabytes each over a
// large document, the sixteenth a small filter over a small one. With
// sixteen slots every query runs at once, and each query's memory is its
// own: the light one resolves whatever the heavy ones hold (measured by
// the process's heap, it failed as limit_exceeded). With the default
// slots, the light one waits its turn in the queue, which holds all
// sixteen, and resolves. The limiter's wait is an hour, so nothing here
// depends on the clock.
func TestLightQueryBesideHeavyOnes(t *testing.T) {
	for _, slots := range []int{16, 0} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) {
			e := newEnv(t, 4)
			lim, err := hybridctx.NewQueryLimiter(slots, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			opts := &hybridctx.RehydratorOptions{QueryLimiter: lim, QueryTimeout: time.Hour}
			heavyDoc := stored(t, e, "["+strings.Repeat(`{"id":12345,"name":"some name here"},`, 20000)+"{}]").String()
			lightDoc := stored(t, e, `{"a":{"b":[1,2,3]}}`).String()
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 15 {
				reh, err := hybridctx.NewRehydrator(e.bind, opts)
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					<-start
					_, _ = reh.Query(e.ctx, hybridctx.QueryRequest{Reference: heavyDoc, Budget: 100,
						Filter: `[.[] | tostring] | [.[] | length] | add`})
				})
			}
			reh, err := hybridctx.NewRehydrator(e.bind, opts)
			if err != nil {
				t.Fatal(err)
			}
			close(start)
			rh := mustView(t)(reh.Query(e.ctx, hybridctx.QueryRequest{Reference: lightDoc, Budget: 100, Filter: `([range(100000)] | length), .a.b[1]`}))
			expect(t, rh.Outcome(), rh.Reason(), hybridctx.Resolved, hybridctx.DigestVerified)
			wg.Wait()
		})
	}
}

// TestQueryDocumentOverTheBound: a document within the size limit whose
// decoded form is over the memory bound is refused as limit_exceeded
// while it is decoded; the same document under a larger bound resolves.
func TestQueryDocumentOverTheBound(t *testing.T) {
	e := newEnv(t, 4)
	doc := stored(t, e, "["+strings.Repeat(`{"a":1,"b":"x"},`, 100000)+"{}]").String() // 1.6 MB, about 40 MB decoded
	req := hybridctx.QueryRequest{Reference: doc, Budget: 100, Filter: "length"}
	for bound, want := range map[int64]hybridctx.Outcome{16 << 20: hybridctx.ViewFailed, 128 << 20: hybridctx.Resolved} {
		reh, err := hybridctx.NewRehydrator(e.bind, &hybridctx.RehydratorOptions{QueryMemoryBytes: bound, QueryMaxBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		rh := mustView(t)(reh.Query(e.ctx, req))
		if rh.Outcome() != want || want == hybridctx.ViewFailed && rh.Reason() != hybridctx.LimitExceeded {
			t.Fatalf("bound %d MiB: %v/%v", bound>>20, rh.Outcome(), rh.Reason())
		}
	}
}
