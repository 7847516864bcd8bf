package dirstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
)

// waitFor yields until cond holds (no sleeps: the goroutines it waits for
// are runnable).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

func TestSyncGroupAloneRunsOwnSync(t *testing.T) {
	var g syncGroup
	runs := 0
	for range 3 {
		if err := g.sync(func() error { runs++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 3 {
		t.Fatalf("%d runs for 3 sequential callers, want 3", runs)
	}
}

// TestSyncGroupJoinsWaiters holds one fsync running while more callers
// arrive: they all share the next one, and each gets the error of the run
// it waited for.
func TestSyncGroupJoinsWaiters(t *testing.T) {
	var g syncGroup
	var mu sync.Mutex
	runs := 0
	release := make(chan error)
	do := func() error {
		mu.Lock()
		runs++
		mu.Unlock()
		return <-release
	}
	errFirst, errSecond := errors.New("first fsync failed"), errors.New("second fsync failed")
	first := make(chan error, 1)
	go func() { first <- g.sync(do) }()
	waitFor(t, "the first run", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.running })

	const k = 8
	later := make(chan error, k)
	for range k {
		go func() { later <- g.sync(do) }()
	}
	waitFor(t, "the waiters", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.waiters == k })
	release <- errFirst // ends the first run, started before the waiters came
	if err := <-first; !errors.Is(err, errFirst) {
		t.Fatalf("first caller = %v, want its run's error", err)
	}
	release <- errSecond // the one shared run of the waiters
	for range k {
		if err := <-later; !errors.Is(err, errSecond) {
			t.Fatalf("waiter = %v, want the error of the run it waited for", err)
		}
	}
	if runs != 2 {
		t.Fatalf("%d runs, want 2 (the waiters share one)", runs)
	}
	// A later run that succeeds reports success to its callers.
	go func() { release <- nil }()
	if err := g.sync(do); err != nil {
		t.Fatalf("after failures, a good run = %v", err)
	}
}

// openTestStore opens a Store in a new directory.
func openTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "ws"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// holdWriteLock takes the database's write lock from another connection
// and returns its release.
func holdWriteLock(t *testing.T, s *Store) func() {
	t.Helper()
	u := url.URL{Scheme: "file", Path: filepath.Join(s.dir, dbName)}
	db, err := sql.Open("sqlite", u.String()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	return func() {
		_, _ = conn.ExecContext(ctx, `ROLLBACK`)
		_ = conn.Close()
		_ = db.Close()
	}
}

func testArgs(t *testing.T, i int) []any {
	t.Helper()
	data := fmt.Sprintf("body %d", i)
	r, err := encodeRecord(artifact.Record{
		Owner: artifact.Owner{User: "u", Workflow: "w", Session: "s"},
		Ref:   artifact.RefOf([]byte(data)), Size: int64(len(data)), Kind: "text",
		CreatedAt: time.Unix(1, 0), LastUsedAt: time.Unix(2, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	return r.args()
}

type createResult struct {
	i       int
	created bool
	err     error
}

// queueBehindLeader starts a leader blocked on the write lock, then the
// requests args (in order) queued behind it, and returns their results'
// channel (the leader's first) once all are queued.
func queueBehindLeader(t *testing.T, s *Store, ctxs []context.Context, args [][]any) <-chan createResult {
	t.Helper()
	out := make(chan createResult, len(args))
	c := &s.rec.creates
	go func() {
		created, err := s.rec.create(context.Background(), args[0])
		out <- createResult{0, created, err}
	}()
	waitFor(t, "the leader", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.taken == 1 })
	for i := 1; i < len(args); i++ {
		go func() {
			created, err := s.rec.create(ctxs[i], args[i])
			out <- createResult{i, created, err}
		}()
		waitFor(t, "a queued request", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == i })
	}
	return out
}

// TestGroupCommitBatches queues requests while a leader waits for the
// write lock: they are committed together in one transaction, a duplicate
// in the batch is not created twice, and every record is there.
func TestGroupCommitBatches(t *testing.T) {
	s := openTestStore(t)
	release := holdWriteLock(t, s)
	const n = 10
	args := make([][]any, n)
	ctxs := make([]context.Context, n)
	for i := range args {
		args[i], ctxs[i] = testArgs(t, i), context.Background()
	}
	args[n-1] = testArgs(t, n-2) // the same owner and digest twice in one batch
	out := queueBehindLeader(t, s, ctxs, args)
	release()
	created := 0
	for range n {
		r := <-out
		if r.err != nil {
			t.Fatalf("request %d: %v", r.i, r.err)
		}
		if r.created {
			created++
		}
	}
	if created != n-1 {
		t.Fatalf("%d created, want %d (one duplicate)", created, n-1)
	}
	if s.rec.creates.batches != 1 {
		t.Fatalf("%d batched transactions, want 1", s.rec.creates.batches)
	}
	var count int
	if err := s.rec.db.QueryRow(`SELECT count(*) FROM records`).Scan(&count); err != nil || count != n-1 {
		t.Fatalf("%d records, %v; want %d", count, err, n-1)
	}
}

// TestGroupCommitFailureConcernsOnlyItsCaller puts a request that the
// database refuses into a batch: the batch is rolled back and retried one
// by one, so that only that caller fails.
func TestGroupCommitFailureConcernsOnlyItsCaller(t *testing.T) {
	s := openTestStore(t)
	release := holdWriteLock(t, s)
	const n, bad = 6, 3
	args := make([][]any, n)
	ctxs := make([]context.Context, n)
	for i := range args {
		args[i], ctxs[i] = testArgs(t, i), context.Background()
	}
	args[bad][0] = nil // NOT NULL user: refused by the INSERT
	out := queueBehindLeader(t, s, ctxs, args)
	release()
	for range n {
		r := <-out
		switch {
		case r.i == bad && r.err == nil:
			t.Fatal("the refused request succeeded")
		case r.i != bad && (r.err != nil || !r.created):
			t.Fatalf("request %d beside a refused one: created %t, %v", r.i, r.created, r.err)
		}
	}
	if s.rec.creates.batches != 0 {
		t.Fatalf("a batch holding a refused request committed")
	}
	var count int
	if err := s.rec.db.QueryRow(`SELECT count(*) FROM records`).Scan(&count); err != nil || count != n-1 {
		t.Fatalf("%d records, %v; want %d", count, err, n-1)
	}
}

// TestGroupCommitWithdrawsCanceled cancels a queued request before its
// batch begins: it returns the context's error and its record is not
// written; the others are.
func TestGroupCommitWithdrawsCanceled(t *testing.T) {
	s := openTestStore(t)
	release := holdWriteLock(t, s)
	const n, gone = 4, 2
	args := make([][]any, n)
	ctxs := make([]context.Context, n)
	for i := range args {
		args[i], ctxs[i] = testArgs(t, i), context.Background()
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctxs[gone] = ctx
	out := queueBehindLeader(t, s, ctxs, args)
	cancel()
	c := &s.rec.creates
	waitFor(t, "the withdrawal", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == n-2 })
	release()
	for range n {
		r := <-out
		switch {
		case r.i == gone && !errors.Is(r.err, context.Canceled):
			t.Fatalf("canceled request = %t, %v; want context.Canceled", r.created, r.err)
		case r.i != gone && (r.err != nil || !r.created):
			t.Fatalf("request %d: created %t, %v", r.i, r.created, r.err)
		}
	}
	var count int
	if err := s.rec.db.QueryRow(`SELECT count(*) FROM records`).Scan(&count); err != nil || count != n-1 {
		t.Fatalf("%d records, %v; want %d", count, err, n-1)
	}
}
