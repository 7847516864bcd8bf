package dirstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/crashfs"
	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

// The concurrent crash workload: goroutines × offloads each, through the
// public Offloader. Goroutines g and g^1 offload the same bodies for the
// same owner (one offloaded, one existing_reference), and the pair beside
// them the same bodies for the other owner, so that every body is offered
// four times at once.
const (
	concGoroutines = 8
	concPerG       = 6
)

func concOwner(g int) artifact.Owner { return []artifact.Owner{testOwner, ownerB}[(g/2)%2] }

func concBodyIndex(g, j int) int { return (g/4)*concPerG + j }

// slowDirSync delays every fsync of the body directory a little, as a disk
// would, so that concurrent commits get to share them. Correctness never
// depends on it; it only makes the shared path likely.
type slowDirSync struct{ vfs.FS }

func (s slowDirSync) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err != nil || name != "sha256" {
		return f, err
	}
	return slowSyncFile{f}, nil
}

type slowSyncFile struct{ vfs.File }

func (f slowSyncFile) Sync() error {
	time.Sleep(200 * time.Microsecond)
	return f.File.Sync()
}

func concBody(i int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 99))
	b := make([]byte, 1024+r.IntN(12<<10))
	for j := range b {
		b[j] = byte('a' + r.IntN(26))
	}
	return b
}

// concRun is one run of the concurrent workload on a crash file system.
type concRun struct {
	image *crashfs.Image
	acks  []ack
	recs  *dirstore.Store
	clock *fakeClock
	log   []crashfs.Op
	ops   int
	// opened: the operations of opening the workspace, which come
	// before any concurrency (the sequential crash test covers them).
	opened int
}

// runConcurrentCrash runs the concurrent workload, crashing at operation
// crashAt (0: never), with bodies on a crash file system and records in a
// SQLite database whose commits are counted in its operation sequence.
func runConcurrentCrash(t *testing.T, crashAt int, mutant bool) *concRun {
	t.Helper()
	ctx := context.Background()
	clk := newClock()
	fsys := crashfs.New(&crashfs.Options{Clock: clk.Now, Log: crashAt == 0})
	fsys.CrashAt(crashAt)
	recs, err := dirstore.Open(ctx, scratchDir(t), dirstore.WithFS(&dirstore.Options{}, crashfs.New(nil)))
	if err != nil {
		t.Fatal(err)
	}
	run := &concRun{recs: recs, clock: clk}
	open := dirstore.OpenBodies
	if mutant {
		open = dirstore.OpenBodiesWithoutDirSync
	}
	ds, err := open(ctx, slowDirSync{fsys}, clk.Now)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer ds.Close()
	run.opened = fsys.Ops()
	store := workspace.New(ds, notedRecords{s: recs, fs: fsys})
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range concGoroutines {
		bind, err := hybridctx.NewBinding(concOwner(g), store)
		if err != nil {
			t.Fatal(err)
		}
		off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 512},
			&hybridctx.OffloaderOptions{Clock: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			<-start
			for j := range concPerG {
				data := concBody(concBodyIndex(g, j))
				out, err := off.Offload(ctx, hybridctx.Call{Tool: "t", ID: "c"}, data)
				if err != nil {
					t.Errorf("Offload: %v", err)
					return
				}
				switch out.Outcome() {
				case hybridctx.Offloaded, hybridctx.ExistingReference:
					mu.Lock()
					run.acks = append(run.acks, ack{fmt.Sprintf("g%d/%d %v", g, j, out.Outcome()), concOwner(g), out.Ref, data})
					mu.Unlock()
				default:
					if fsys.Crashed() == nil {
						t.Errorf("g%d/%d: %v (%v) without a crash", g, j, out.Outcome(), out.Reason())
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	run.ops = fsys.Ops()
	run.log = fsys.Log()
	run.image = fsys.Crash()
	return run
}

// checkConcurrentState reopens one reboot and returns what is wrong: an
// acknowledged offload that does not resolve to its bytes, a record whose
// body does not verify, a visible body that does not verify.
func checkConcurrentState(t *testing.T, run *concRun, recs driver.Records, fsys *crashfs.FS) []string {
	t.Helper()
	ctx := context.Background()
	ds, err := dirstore.OpenBodies(ctx, fsys, run.clock.Now)
	if err != nil {
		return []string{fmt.Sprintf("reopen: %v", err)}
	}
	defer ds.Close()
	store := workspace.New(ds, recs)
	var bad []string
	for info, err := range store.ListBodies(ctx) {
		if err != nil {
			return append(bad, fmt.Sprintf("list: %v", err))
		}
		ref, _ := artifact.ParseDigest(info.Key)
		if err := store.VerifyBody(ctx, ref, -1); err != nil {
			bad = append(bad, fmt.Sprintf("visible body %s does not verify: %v", info.Key[:8], err))
		}
	}
	for rec, err := range store.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			return append(bad, fmt.Sprintf("list records: %v", err))
		}
		if err := store.VerifyBody(ctx, rec.Ref, rec.Size); err != nil {
			bad = append(bad, fmt.Sprintf("record of %s: body %v", rec.Ref.Hex()[:8], err))
		}
	}
	for _, a := range run.acks {
		oc, b, err := drivertest.Resolve(ctx, store, a.owner, a.ref, run.clock.Now())
		if err != nil || oc != drivertest.Resolved || !bytes.Equal(b, a.data) {
			bad = append(bad, fmt.Sprintf("%s: acknowledged, after the crash %v %v", a.step, oc, err))
		}
	}
	return bad
}

// TestCrashConsistencyConcurrent crashes the concurrent workload, whose
// body commits share directory fsyncs and whose records share SQLite
// commits, at seeded random operations and explores six reboots of each:
// every offload acknowledged before the crash resolves to its bytes, and
// no record or visible body is without durable, verifying bytes.
func TestCrashConsistencyConcurrent(t *testing.T) {
	skipUnlessLong(t)
	full := runConcurrentCrash(t, 0, false)
	defer full.recs.Close()
	if len(full.acks) != concGoroutines*concPerG {
		t.Fatalf("%d of %d offloads acknowledged without a crash", len(full.acks), concGoroutines*concPerG)
	}
	checkOrdering(t, full.log)
	offloaded := map[string]int{}
	for _, a := range full.acks {
		if bytes.HasSuffix([]byte(a.step), []byte(hybridctx.Offloaded.String())) {
			offloaded[a.owner.User+"/"+a.ref.Hex()]++
		}
	}
	for k, n := range offloaded {
		if n != 1 {
			t.Fatalf("%s offloaded %d times, want exactly once", k[:12], n)
		}
	}
	links, syncs, creates := 0, 0, 0
	for _, op := range full.log {
		switch {
		case op.Kind == "link":
			links++
		case op.Kind == "sync" && op.Path == "sha256":
			syncs++
		case op.Kind == "record-create":
			creates++
		}
	}
	t.Logf("complete run: %d body links, %d body-directory fsyncs, %d record creations", links, syncs, creates)
	points := 30
	if testing.Short() {
		points = 8
	}
	rng := rand.New(rand.NewPCG(15, 6))
	states, failures := 0, 0
	for range points {
		n := full.opened + 1 + rng.IntN(full.ops-full.opened)
		run := runConcurrentCrash(t, n, false)
		recs := snapshotRecords(t, run.recs)
		for i, cfg := range crashConfigs(uint64(n))[:6] {
			cfg.Clock = run.clock.Now
			states++
			for _, msg := range checkConcurrentState(t, run, recs, run.image.Clone(cfg)) {
				failures++
				t.Errorf("crash at op %d of %d, reboot %d: %s", n, full.ops, i, msg)
			}
		}
		_ = run.recs.Close()
		if failures > 20 {
			t.FailNow()
		}
	}
	t.Logf("%d crash points of %d operations, %d crash states, %d acknowledged offloads in the complete run, %d failures",
		points, full.ops, states, len(full.acks), failures)
}

// TestCrashConsistencyConcurrentCatchesMissingDirSync: without the body
// directory fsync, some acknowledged offload of the concurrent workload is
// lost in some crash state.
func TestCrashConsistencyConcurrentCatchesMissingDirSync(t *testing.T) {
	full := runConcurrentCrash(t, 0, true)
	defer full.recs.Close()
	rng := rand.New(rand.NewPCG(15, 7))
	caught := 0
	for range 10 {
		run := runConcurrentCrash(t, full.opened+1+rng.IntN(full.ops-full.opened), true)
		cfg := crashfs.CloneConfig{Entries: crashfs.Lose, Data: crashfs.Lose, Clock: run.clock.Now}
		if len(checkConcurrentState(t, run, run.recs, run.image.Clone(cfg))) > 0 {
			caught++
		}
		_ = run.recs.Close()
	}
	if caught == 0 {
		t.Fatal("the mutant without a directory fsync passed every crash state")
	}
	t.Logf("mutant caught at %d of 10 crash points", caught)
}
