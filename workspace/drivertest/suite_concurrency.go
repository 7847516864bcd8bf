package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

var concurrencyTests = []subtest{
	{"ConcurrentPutSameContent", testConcurrentPut},
	{"ConcurrentCreateRecord", testConcurrentCreateRecord},
	{"ReadersDuringWrites", testReadersDuringWrites},
	{"LockerRepairsOnce", testLockerRepairsOnce},
	{"Locker", testLocker},
	{"CancelledContextStore", testCancelledStore},
	{"CancelledContextDriver", testCancelledDriver},
}

// together runs f(0..n-1) in n goroutines released at once.
func together(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}

func testConcurrentPut(e *env) {
	const goroutines, trials, size = 32, 10, 64 << 10
	var refs []artifact.Ref
	for trial := range trials {
		data := content(uint64(100+trial), size)
		want := artifact.RefOf(data)
		results := make([]workspace.PutResult, goroutines)
		together(goroutines, func(i int) {
			ref, n, res, err := Put(e.ctx, e.s, bytes.NewReader(data), nil)
			if err != nil || ref != want || n != size {
				e.t.Errorf("trial %d: Put = %v, %d, %v", trial, ref, n, err)
			}
			results[i] = res
		})
		count := map[workspace.PutResult]int{}
		for _, r := range results {
			count[r]++
		}
		if count[workspace.Created] != 1 || count[workspace.Existing] != goroutines-1 {
			e.t.Fatalf("trial %d: results %v; want 1 created, %d existing", trial, count, goroutines-1)
		}
		if err := e.s.VerifyBody(e.ctx, want, size); err != nil {
			e.t.Fatalf("trial %d: VerifyBody: %v", trial, err)
		}
		refs = append(refs, want)
	}
	e.wantKeys(refs...)
}

func testConcurrentCreateRecord(e *env) {
	const goroutines, trials = 32, 10
	for trial := range trials {
		owner := artifact.Owner{User: "u", Workflow: "w", Session: fmt.Sprint("s", trial)}
		rec := e.record(owner, []byte("shared"), t0)
		var created atomic.Int64
		together(goroutines, func(i int) {
			r := rec
			r.CallID = fmt.Sprint("call-", i)
			ok, err := e.s.CreateRecord(e.ctx, r)
			if err != nil {
				e.t.Errorf("trial %d: CreateRecord: %v", trial, err)
			}
			if ok {
				created.Add(1)
			}
		})
		if n := created.Load(); n != 1 {
			e.t.Fatalf("trial %d: %d calls created the record, want 1", trial, n)
		}
		if got := e.list(driver.Query{Owner: &owner}); len(got) != 1 {
			e.t.Fatalf("trial %d: %d records, want 1", trial, len(got))
		}
	}
}

func testReadersDuringWrites(e *env) {
	const nBodies, writers, readers, rounds = 4, 4, 4, 15
	bodies := make([][]byte, nBodies)
	refs := make([]artifact.Ref, nBodies)
	for i := range bodies {
		bodies[i] = content(uint64(200+i), 64<<10+i)
		refs[i] = artifact.RefOf(bodies[i])
	}
	var done atomic.Bool
	var reads, found, bad atomic.Int64
	check := func(who string, i int, got []byte, err error) {
		reads.Add(1)
		var msg string
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			msg = fmt.Sprintf("%s of body %d during writes: %v", who, i, err)
		case !bytes.Equal(got, bodies[i]):
			msg = fmt.Sprintf("%s of body %d during writes returned %d bytes that are not the body", who, i, len(got))
		default:
			found.Add(1)
		}
		if msg != "" && bad.Add(1) <= 10 {
			e.t.Error(msg)
		}
	}
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			for k := r; !done.Load() || k < r+2*nBodies; k++ {
				i := k % nBodies
				size := int64(len(bodies[i]))
				got, err := e.s.ReadVerified(e.ctx, refs[i], size, 0, size)
				check("ReadVerified", i, got, err)
				got, info, err := readDriver(e.ctx, e.b, refs[i].Hex())
				if err == nil && info.Size != size {
					err = fmt.Errorf("reader info says %d bytes", info.Size)
				}
				check("driver read", i, got, err)
			}
		})
	}
	together(writers, func(w int) {
		for round := range rounds {
			for j := range nBodies {
				i := (w + j + round) % nBodies
				if (w+round)%2 == 0 {
					if _, _, _, err := Put(e.ctx, e.s, bytes.NewReader(bodies[i]), nil); err != nil {
						e.t.Errorf("Put during reads: %v", err)
					}
					continue
				}
				if err := e.writeBody(bodies[i], true); err != nil {
					e.t.Errorf("Commit(replace) during reads: %v", err)
				}
			}
		}
	})
	done.Store(true)
	wg.Wait()
	if found.Load() == 0 {
		e.t.Fatalf("none of %d reads found a body", reads.Load())
	}
	e.wantKeys(refs...)
	for i := range bodies {
		e.mustRead(refs[i], bodies[i])
	}
}

func testLockerRepairsOnce(e *env) {
	e.needTamper()
	const goroutines, trials = 8, 5
	in := Instrument(e.b, e.r, nil) // the backend's Locker, or an in-process one
	s := workspace.New(in, in)
	for trial := range trials {
		data := content(uint64(300+trial), 32<<10)
		ref := e.put(data)
		e.tamper(ref.Hex(), flipped(data, trial))
		results := make([]workspace.PutResult, goroutines)
		together(goroutines, func(i int) {
			_, _, res, err := Put(e.ctx, s, bytes.NewReader(data), nil)
			if err != nil {
				e.t.Errorf("trial %d: Put over a corrupt body: %v", trial, err)
			}
			results[i] = res
		})
		count := map[workspace.PutResult]int{}
		for _, r := range results {
			count[r]++
		}
		if count[workspace.Replaced] != 1 || count[workspace.Existing] != goroutines-1 {
			e.t.Fatalf("trial %d: results %v; want 1 replaced, %d existing", trial, count, goroutines-1)
		}
		e.mustRead(ref, data)
	}
}

func testLocker(e *env) {
	l, ok := e.b.(driver.Locker)
	if !ok {
		e.t.Skip("backend is not a driver.Locker")
	}
	k1, k2 := artifact.RefOf([]byte("lock one")).Hex(), artifact.RefOf([]byte("lock two")).Hex()
	unlock1, err := l.Lock(e.ctx, k1)
	if err != nil {
		e.t.Fatalf("Lock: %v", err)
	}
	type result struct {
		unlock func() error
		err    error
	}
	wctx, cancelWaiter := context.WithCancel(e.ctx)
	acquired := make(chan result, 1)
	go func() {
		u, err := l.Lock(wctx, k1)
		acquired <- result{u, err}
	}()
	defer func() {
		cancelWaiter()
		if r := <-acquired; r.err == nil {
			_ = r.unlock()
		}
	}()
	select {
	case r := <-acquired:
		acquired <- r
		e.t.Fatalf("a held lock was taken again (err %v)", r.err)
	case <-time.After(50 * time.Millisecond):
	}
	unlock2, err := l.Lock(e.ctx, k2)
	if err != nil {
		e.t.Fatalf("Lock of another key while one is held: %v", err)
	}
	defer unlock2()
	tctx, cancel := context.WithTimeout(e.ctx, 20*time.Millisecond)
	defer cancel()
	if u, err := l.Lock(tctx, k2); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			_ = u()
		}
		e.t.Fatalf("Lock of a held key until a deadline: %v, want context.DeadlineExceeded", err)
	}
	if err := unlock1(); err != nil {
		e.t.Fatalf("unlock: %v", err)
	}
	select {
	case r := <-acquired:
		acquired <- r // released by the deferred function
		if r.err != nil {
			e.t.Fatalf("Lock after the holder unlocked: %v", r.err)
		}
	case <-time.After(10 * time.Second):
		e.t.Fatalf("a released lock was not handed over")
	}
}
