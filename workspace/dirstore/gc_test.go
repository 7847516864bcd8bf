package dirstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

var _ driver.RecordExpirer = (*dirstore.Store)(nil)

// TestExpireRecords deletes, over several batches, exactly the records
// last used before the cutoff.
func TestExpireRecords(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(scratchDir(t), "ws"))
	now := time.Now().UTC()
	const stale = 600 // more than one batch
	for i := range stale + 5 {
		used := now.Add(-40 * 24 * time.Hour)
		if i >= stale {
			used = now.Add(-time.Minute)
		}
		if _, err := s.CreateRecord(ctx, record(testOwner, fmt.Sprint("body ", i), used)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.ExpireRecords(ctx, now.Add(-30*24*time.Hour))
	if err != nil || n != stale {
		t.Fatalf("ExpireRecords = %d, %v; want %d", n, err, stale)
	}
	left := 0
	for rec, err := range s.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.LastUsedAt.Before(now.Add(-time.Hour)) {
			t.Fatalf("a stale record survived: %v", rec.LastUsedAt)
		}
		left++
	}
	if left != 5 {
		t.Fatalf("%d records left, want 5", left)
	}
	if n, err := s.ExpireRecords(ctx, now.Add(-30*24*time.Hour)); n != 0 || err != nil {
		t.Fatalf("second ExpireRecords = %d, %v", n, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.ExpireRecords(cctx, now); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ExpireRecords = %v", err)
	}
	_ = s.Close()
	if _, err := s.ExpireRecords(ctx, now); err == nil {
		t.Fatal("ExpireRecords on a closed Store succeeded")
	}
}

// TestGCConcurrentWithReuse runs GC on a directory workspace while other
// owners offload the very contents whose records GC expires, with the real
// cross-process lock, in real time: every acknowledged offload resolves and
// no record points at an absent body.
func TestGCConcurrentWithReuse(t *testing.T) {
	ctx := context.Background()
	rounds := 10
	if testing.Short() {
		rounds = 5
	}
	deleted := 0
	for round := range rounds {
		clk := newClock()
		ds, err := dirstore.Open(ctx, filepath.Join(scratchDir(t), "ws"), &dirstore.Options{Clock: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		store := workspace.New(ds, ds)
		var contents [][]byte
		for i := range 6 {
			c := bytes.Repeat([]byte(fmt.Sprintf("round %d body %d\n", round, i)), 500)
			contents = append(contents, c)
			offloadWith(t, store, testOwner, clk, c)
		}
		clk.Add(40 * 24 * time.Hour)
		var wg sync.WaitGroup
		var rep workspace.GCReport
		var gcErr error
		outs := make([]*hybridctx.OffloadResult, len(contents))
		wg.Add(1 + len(contents))
		go func() {
			defer wg.Done()
			rep, gcErr = store.CollectGarbage(ctx, &workspace.GCOptions{MaxAge: 30 * 24 * time.Hour, Clock: clk.Now})
		}()
		for i, c := range contents {
			go func() {
				defer wg.Done()
				owner := ownerB
				if i%2 == 1 {
					owner = testOwner // the owner whose record is expiring
				}
				outs[i] = offloadWith(t, store, owner, clk, c)
			}()
		}
		wg.Wait()
		if gcErr != nil {
			t.Fatal(gcErr)
		}
		deleted += int(rep.BodiesDeleted)
		for i, out := range outs {
			owner := ownerB
			if i%2 == 1 {
				owner = testOwner
			}
			b, _ := hybridctx.NewBinding(owner, store)
			h, _ := hybridctx.NewRehydrator(b, nil)
			r, err := h.Rehydrate(ctx, hybridctx.Request{Reference: out.Ref.String(), Budget: 1 << 20})
			if err != nil || r.Outcome() != hybridctx.Resolved || !bytes.Equal(r.Segment.Bytes(), contents[i]) {
				t.Fatalf("round %d: offload %d acknowledged (%v), then %v %v", round, i, out.Reason(), r, err)
			}
		}
		for rec, err := range store.ListRecords(ctx, driver.Query{}) {
			if err != nil {
				t.Fatal(err)
			}
			if err := store.VerifyBody(ctx, rec.Ref, rec.Size); err != nil {
				t.Fatalf("round %d: record of a body that does not verify: %v", round, err)
			}
		}
		_ = store.Close()
	}
	t.Logf("%d rounds, %d bodies collected while reused", rounds, deleted)
}

// offloadWith offloads c for owner and fails the test unless it is stored.
func offloadWith(t *testing.T, store *workspace.Store, owner artifact.Owner, clk *fakeClock, c []byte) *hybridctx.OffloadResult {
	b, _ := hybridctx.NewBinding(owner, store)
	o, _ := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 64}, &hybridctx.OffloaderOptions{Clock: clk.Now})
	out, err := o.Offload(context.Background(), hybridctx.Call{Tool: "t", ID: "c"}, c)
	if err != nil || out.Outcome() != hybridctx.Offloaded && out.Outcome() != hybridctx.ExistingReference {
		t.Errorf("offload: %v, %v", out, err)
		return out
	}
	return out
}

// gcContents is the content i of the cross-process GC test.
func gcContents(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("cross-process body %d\n", i)), 400)
}

const gcBodies = 8

// gcReuseHelper offloads every gcContents for its own owner, printing
// "RESULT <i> <outcome>" for each.
func gcReuseHelper(t *testing.T, s *dirstore.Store, index string) {
	store := workspace.New(s, s)
	owner := artifact.Owner{User: "helper" + index, Workflow: "wf", Session: "s"}
	b, _ := hybridctx.NewBinding(owner, store)
	o, _ := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 64}, nil)
	for i := range gcBodies {
		out, err := o.Offload(context.Background(), hybridctx.Call{Tool: "t", ID: "c"}, gcContents(i))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("RESULT %d %s\n", i, out.Outcome())
	}
}

// TestGCAcrossProcesses: while three other processes offload contents whose
// only records GC is expiring (bodies old enough to collect), this process
// collects garbage in a loop. Every offload the helpers acknowledged
// resolves, and no record points at an absent body.
func TestGCAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ws")
	past := newClock()
	past.t = time.Now().Add(-40 * 24 * time.Hour)
	ds, err := dirstore.Open(ctx, dir, &dirstore.Options{Clock: past.Now})
	if err != nil {
		t.Fatal(err)
	}
	store := workspace.New(ds, ds)
	for i := range gcBodies {
		offloadWith(t, store, testOwner, past, gcContents(i))
	}
	const procs = 3
	scratch := t.TempDir()
	hs := startHelpers(t, "gcreuse", dir, scratch, procs, true)
	done := make(chan []string)
	go func() { done <- results(t, hs) }()
	passes, deleted := 0, int64(0)
	var res []string
	for res == nil {
		rep, err := store.CollectGarbage(ctx, &workspace.GCOptions{MaxAge: 30 * 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		passes++
		deleted += rep.BodiesDeleted
		select {
		case res = <-done:
		default:
		}
	}
	if len(res) != procs*gcBodies {
		t.Fatalf("%d results, want %d: %v", len(res), procs*gcBodies, res)
	}
	for p := range procs {
		owner := artifact.Owner{User: fmt.Sprint("helper", p), Workflow: "wf", Session: "s"}
		b, _ := hybridctx.NewBinding(owner, store)
		h, _ := hybridctx.NewRehydrator(b, nil)
		for i := range gcBodies {
			r, err := h.Rehydrate(ctx, hybridctx.Request{Reference: artifact.RefOf(gcContents(i)).String(), Budget: 1 << 20})
			if err != nil || r.Outcome() != hybridctx.Resolved || !bytes.Equal(r.Segment.Bytes(), gcContents(i)) {
				t.Fatalf("helper %d body %d: %v %v (results %v)", p, i, r, err, res)
			}
		}
	}
	for rec, err := range store.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := store.VerifyBody(ctx, rec.Ref, rec.Size); err != nil {
			t.Fatalf("a record points at a body that does not verify: %v", err)
		}
	}
	_ = store.Close()
	t.Logf("%d GC passes during %d offloads in %d processes, %d bodies collected meanwhile", passes, procs*gcBodies, procs, deleted)
}
