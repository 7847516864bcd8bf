package workspace_test

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// gcRounds is the number of interleavings TestGCInterleavings runs;
// HYBRIDCTX_GC_ROUNDS raises it for a longer run.
func gcRounds(t *testing.T) int {
	if n, err := strconv.Atoi(os.Getenv("HYBRIDCTX_GC_ROUNDS")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return 100
	}
	return 1000
}

// TestGCInterleavings runs garbage collection concurrently with offloads
// that reuse old bodies, under a fake clock, in 1,000 random interleavings
// (a random fake-time pause before every driver call decides who goes
// next). In every round: every acknowledged offload resolves to its exact
// bytes, every record's body is present and verifies, and a concurrent
// rehydration gives the right bytes, unauthorized or missing, never others.
func TestGCInterleavings(t *testing.T) {
	skipUnlessLong(t)
	rounds := gcRounds(t)
	schedules := map[string]bool{}
	for round := range rounds {
		var sig string
		synctest.Test(t, func(t *testing.T) {
			violations, s := gcRound(t, uint64(round), false)
			for _, v := range violations {
				t.Errorf("round %d: %s", round, v)
			}
			sig = s
		})
		schedules[sig] = true
		if t.Failed() {
			return
		}
	}
	t.Logf("%d interleavings, %d distinct outcome combinations", rounds, len(schedules))
}

// TestGCInterleavingsCatchUnlockedGC proves the test has teeth: a GC that
// deletes from its first scan, without the per-body lock and re-check,
// leaves records pointing at deleted bodies in some rounds.
func TestGCInterleavingsCatchUnlockedGC(t *testing.T) {
	caught := 0
	rounds := 200
	for round := range rounds {
		synctest.Test(t, func(t *testing.T) {
			violations, _ := gcRound(t, uint64(round), true)
			if len(violations) > 0 {
				caught++
			}
		})
	}
	if caught == 0 {
		t.Fatalf("the unlocked GC mutant survived %d rounds", rounds)
	}
	t.Logf("unlocked GC caught in %d of %d rounds", caught, rounds)
}

// gcRound runs one interleaving inside a synctest bubble and returns the
// invariant violations and a signature of the outcomes.
func gcRound(t *testing.T, seed uint64, mutant bool) (violations []string, sig string) {
	ctx := context.Background()
	m := memstore.New()
	y := &yielder{m: m, rng: rand.New(rand.NewPCG(seed, 0x9c))}
	s := workspace.New(y, y)
	contents := [][]byte{bodyOf(byte(seed), 300), bodyOf(byte(seed)+1, 400), bodyOf(byte(seed)+2, 500)}
	refs := make([]artifact.Ref, len(contents))
	for i, c := range contents {
		refs[i] = offloadAs(t, s, ownerA, c)
	}
	time.Sleep(40 * day) // every record and body is now old
	y.on.Store(true)

	type result struct {
		name  string
		owner artifact.Owner
		ref   artifact.Ref
		data  []byte
		c     workspace.AttachCase
		err   error
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []result
		gcRep   workspace.GCReport
		gcErr   error
		readOC  string
		readB   []byte
	)
	offload := func(name string, owner artifact.Owner, i int, stream bool) {
		defer wg.Done()
		c, err := attachData(ctx, s, owner, contents[i], stream)
		mu.Lock()
		results = append(results, result{name, owner, refs[i], contents[i], c, err})
		mu.Unlock()
	}
	wg.Add(5)
	go func() {
		defer wg.Done()
		opts := &workspace.GCOptions{MaxAge: maxAge, Grace: gcGrace}
		if mutant {
			opts = workspace.UnlockedGC(opts)
		}
		gcRep, gcErr = s.CollectGarbage(ctx, opts)
	}()
	go offload("B reuses body 0", ownerB, 0, false) // new owner, old body
	go offload("A reuses body 1", ownerA, 1, false) // old record, touched or collected
	go offload("C streams body 2", ownerC, 2, true) // new owner, old body, stream
	go func() {
		defer wg.Done()
		readOC, readB = resolve(t, s, ownerA, refs[0])
	}()
	wg.Wait()
	y.on.Store(false)

	if gcErr != nil {
		violations = append(violations, fmt.Sprintf("GC: %v", gcErr))
	}
	switch readOC {
	case drivertest.Resolved:
		if !bytes.Equal(readB, contents[0]) {
			violations = append(violations, "concurrent rehydration resolved to other bytes")
		}
	case drivertest.Unauthorized, drivertest.Missing:
	default:
		violations = append(violations, "concurrent rehydration: "+readOC)
	}
	sig = fmt.Sprintf("gc=%d/%d read=%v", gcRep.RecordsDeleted, gcRep.BodiesDeleted, readOC)
	for _, r := range results {
		if r.err != nil {
			violations = append(violations, fmt.Sprintf("%s: %v", r.name, r.err))
			continue
		}
		sig += " " + r.c.String()
		if !drivertest.Acknowledged(r.c) {
			violations = append(violations, fmt.Sprintf("%s: %v", r.name, r.c))
			continue
		}
		// Acknowledged: the owner reads back exactly its bytes.
		if oc, b := resolve(t, s, r.owner, r.ref); oc != drivertest.Resolved || !bytes.Equal(b, r.data) {
			violations = append(violations, fmt.Sprintf("%s: acknowledged, then rehydration gives %v", r.name, oc))
		}
	}
	// No record points at an absent or corrupt body.
	for rec, err := range s.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			violations = append(violations, err.Error())
			break
		}
		if err := s.VerifyBody(ctx, rec.Ref, rec.Size); err != nil {
			violations = append(violations, fmt.Sprintf("a record points at a body that does not verify: %v", err))
		}
	}
	return violations, sig
}

// yielder wraps a memstore so that every driver call first pauses for a
// random fake-time interval (or just yields), which makes the goroutines of
// a synctest bubble interleave differently for every seed. Record mutations
// and the expiry go through one mutex, so expiry is atomic as one SQL
// statement is.
type yielder struct {
	m   *memstore.Store
	on  atomicBool
	mu  sync.Mutex // guards rng
	rec sync.Mutex // serializes record mutations and the expiry
	rng *rand.Rand
}

type atomicBool struct {
	mu sync.Mutex
	v  bool
}

func (a *atomicBool) Store(v bool) { a.mu.Lock(); a.v = v; a.mu.Unlock() }
func (a *atomicBool) Load() bool   { a.mu.Lock(); defer a.mu.Unlock(); return a.v }

func (y *yielder) pause() {
	if !y.on.Load() {
		return
	}
	y.mu.Lock()
	n := y.rng.IntN(4)
	y.mu.Unlock()
	if n == 0 {
		runtime.Gosched()
		return
	}
	time.Sleep(time.Duration(n) * time.Millisecond)
}

func (y *yielder) NewWriter(ctx context.Context) (driver.Writer, error) {
	y.pause()
	w, err := y.m.NewWriter(ctx)
	if err != nil {
		return nil, err
	}
	return &yieldWriter{Writer: w, y: y}, nil
}

type yieldWriter struct {
	driver.Writer
	y *yielder
}

func (w *yieldWriter) Commit(ctx context.Context, key string, replace bool) error {
	w.y.pause()
	return w.Writer.Commit(ctx, key, replace)
}

func (y *yielder) Open(ctx context.Context, key string) (driver.Reader, error) {
	y.pause()
	return y.m.Open(ctx, key)
}

func (y *yielder) Stat(ctx context.Context, key string) (driver.Info, error) {
	y.pause()
	return y.m.Stat(ctx, key)
}

func (y *yielder) Delete(ctx context.Context, key string) error {
	y.pause()
	return y.m.Delete(ctx, key)
}

func (y *yielder) List(ctx context.Context) iter.Seq2[driver.Info, error] {
	y.pause()
	return y.m.List(ctx)
}

func (y *yielder) Lock(ctx context.Context, key string) (func() error, error) {
	y.pause()
	return y.m.Lock(ctx, key)
}

func (y *yielder) CreateRecord(ctx context.Context, rec artifact.Record) (bool, error) {
	y.pause()
	y.rec.Lock()
	defer y.rec.Unlock()
	return y.m.CreateRecord(ctx, rec)
}

func (y *yielder) GetRecord(ctx context.Context, o artifact.Owner, r artifact.Ref) (artifact.Record, error) {
	y.pause()
	return y.m.GetRecord(ctx, o, r)
}

func (y *yielder) TouchRecord(ctx context.Context, o artifact.Owner, r artifact.Ref, at time.Time) error {
	y.pause()
	y.rec.Lock()
	defer y.rec.Unlock()
	return y.m.TouchRecord(ctx, o, r, at)
}

func (y *yielder) DeleteRecord(ctx context.Context, o artifact.Owner, r artifact.Ref) error {
	y.pause()
	y.rec.Lock()
	defer y.rec.Unlock()
	return y.m.DeleteRecord(ctx, o, r)
}

func (y *yielder) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	y.pause()
	return y.m.ListRecords(ctx, q)
}

// ExpireRecords deletes the stale records atomically with respect to the
// other record mutations.
func (y *yielder) ExpireRecords(ctx context.Context, cutoff time.Time) (int64, error) {
	y.pause()
	y.rec.Lock()
	defer y.rec.Unlock()
	var stale []artifact.Record
	for r, err := range y.m.ListRecords(ctx, driver.Query{UnusedSince: cutoff}) {
		if err != nil {
			return 0, err
		}
		stale = append(stale, r)
	}
	for _, r := range stale {
		if err := y.m.DeleteRecord(ctx, r.Owner, r.Ref); err != nil {
			return 0, err
		}
	}
	return int64(len(stale)), nil
}

var (
	_ driver.Bodies        = (*yielder)(nil)
	_ driver.Records       = (*yielder)(nil)
	_ driver.Locker        = (*yielder)(nil)
	_ driver.RecordExpirer = (*yielder)(nil)
)
