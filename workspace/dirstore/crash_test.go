package dirstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/crashfs"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// fakeClock is a settable clock shared by the file system, the Store, the
// Offloader and GC of one run.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// notedRecords counts every record call of a Store in the crash file
// system's operation sequence, so that a crash falls before or after each
// database commit, and a crashed run commits nothing more.
type notedRecords struct {
	s  *dirstore.Store
	fs *crashfs.FS
}

func (n notedRecords) note(kind string, ref artifact.Ref) error {
	detail := ""
	if !ref.IsZero() {
		detail = ref.Hex()
	}
	return n.fs.Note(kind, detail)
}

func (n notedRecords) CreateRecord(ctx context.Context, rec artifact.Record) (bool, error) {
	if err := n.note("record-create", rec.Ref); err != nil {
		return false, err
	}
	return n.s.CreateRecord(ctx, rec)
}

func (n notedRecords) GetRecord(ctx context.Context, o artifact.Owner, ref artifact.Ref) (artifact.Record, error) {
	if err := n.note("record-get", ref); err != nil {
		return artifact.Record{}, err
	}
	return n.s.GetRecord(ctx, o, ref)
}

func (n notedRecords) TouchRecord(ctx context.Context, o artifact.Owner, ref artifact.Ref, at time.Time) error {
	if err := n.note("record-touch", ref); err != nil {
		return err
	}
	return n.s.TouchRecord(ctx, o, ref, at)
}

func (n notedRecords) DeleteRecord(ctx context.Context, o artifact.Owner, ref artifact.Ref) error {
	if err := n.note("record-delete", ref); err != nil {
		return err
	}
	return n.s.DeleteRecord(ctx, o, ref)
}

func (n notedRecords) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	return func(yield func(artifact.Record, error) bool) {
		if err := n.note("record-list", q.Ref); err != nil {
			yield(artifact.Record{}, err)
			return
		}
		for r, err := range n.s.ListRecords(ctx, q) {
			if !yield(r, err) {
				return
			}
		}
	}
}

func (n notedRecords) ExpireRecords(ctx context.Context, cutoff time.Time) (int64, error) {
	if err := n.note("record-expire", artifact.Ref{}); err != nil {
		return 0, err
	}
	return n.s.ExpireRecords(ctx, cutoff)
}

// The contents of the crash workload (small, since every crash state
// hashes them many times).
var (
	crashX = bytes.Repeat([]byte("crash-consistency X body line\n"), 1_500)
	crashY = bytes.Repeat([]byte("streamed Y\n"), 2_000)
	crashZ = bytes.Repeat([]byte("orphan Z\n"), 1_000)
	ownerB = artifact.Owner{User: "bob", Workflow: "wf", Session: "s1"}
	ownerC = artifact.Owner{User: "carol", Workflow: "wf", Session: "s1"}
)

// ack is an offload acknowledged (offloaded or existing_reference) before
// the crash.
type ack struct {
	step  string
	owner artifact.Owner
	ref   artifact.Ref
	data  []byte
}

// crashRun is one run of the workload on a fresh crash file system that
// crashes at operation crashAt (0: never; the state at the end is then
// frozen). It returns the frozen image, the acknowledged offloads, the
// directory of its records database, whether X was tampered with before
// the crash and whether its repair was acknowledged.
type crashRun struct {
	image            *crashfs.Image
	acks             []ack
	dbDir            string
	tampered, healed bool
	log              []crashfs.Op
	clock            *fakeClock
	recs             *dirstore.Store
	completed        bool
	outcomes         []string
}

func runCrashWorkload(t *testing.T, crashAt int, mutant bool) *crashRun {
	t.Helper()
	ctx := context.Background()
	clk := newClock()
	fsys := crashfs.New(&crashfs.Options{Clock: clk.Now, Log: true})
	fsys.CrashAt(crashAt)
	run := &crashRun{dbDir: scratchDir(t), clock: clk}
	// The records database is opened once for the run and its checks;
	// its own files go to a throwaway file system, everything else to the
	// crashing one.
	recs, err := dirstore.Open(ctx, run.dbDir, dirstore.WithFS(&dirstore.Options{}, crashfs.New(nil)))
	if err != nil {
		t.Fatal(err)
	}
	run.recs = recs
	var ds *dirstore.Store
	if mutant {
		ds, err = dirstore.OpenBodiesWithoutDirSync(ctx, fsys, clk.Now)
	} else {
		ds, err = dirstore.OpenBodies(ctx, fsys, clk.Now)
	}
	if err != nil {
		if errors.Is(err, crashfs.ErrCrashed) {
			// Crashed while creating the workspace: nothing acknowledged.
			run.image = fsys.Crashed()
			run.log = fsys.Log()
			return run
		}
		t.Fatalf("Open: %v", err)
	}
	defer ds.Close()
	store := workspace.New(ds, notedRecords{s: recs, fs: fsys})

	offload := func(step string, owner artifact.Owner, data []byte, stream bool) {
		c, err := drivertest.AttachData(ctx, store, owner, data, stream, clk.Now())
		run.outcomes = append(run.outcomes, step+"="+c.String())
		switch {
		case drivertest.Acknowledged(c):
			run.acks = append(run.acks, ack{step, owner, artifact.RefOf(data), data})
			if c == workspace.AttachReplaced {
				run.healed = true
			}
		case fsys.Crashed() == nil:
			t.Fatalf("%s: %v, %v without a crash", step, c, err)
		}
	}

	// 0. An orphan body, collected by GC in step 8.
	_, _, _, _ = drivertest.Put(ctx, store, bytes.NewReader(crashZ), nil)
	offload("1 A writes X", testOwner, crashX, false)
	offload("2 A again", testOwner, crashX, false)
	offload("3 B reuses X", ownerB, crashX, false)
	offload("4 A streams Y", testOwner, crashY, true)
	// 5. Bit rot in X, durable.
	run.tampered = fsys.Crashed() == nil
	tamper(fsys, "sha256/"+keyOf(crashX))
	offload("6 A repairs X", testOwner, crashX, false)
	clk.Add(48 * time.Hour)
	offload("7 A touches Y", testOwner, crashY, false)
	_, _ = store.CollectGarbage(ctx, &workspace.GCOptions{Clock: clk.Now})
	offload("9 C reuses X", ownerC, crashX, false)

	run.completed = fsys.Crashed() == nil
	run.image = fsys.Crash()
	run.log = fsys.Log()
	return run
}

// tamper flips bytes of the file name in place and syncs them, as bit rot
// would; failures after a crash are ignored.
func tamper(fsys *crashfs.FS, name string) {
	_ = fsys.Chmod(name, 0o600)
	f, err := fsys.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write([]byte("ROT"))
	_ = f.Sync()
	_ = fsys.Chmod(name, 0o400)
}

// crashConfigs are the reboots explored per crash point.
func crashConfigs(seed uint64) []crashfs.CloneConfig {
	cfgs := []crashfs.CloneConfig{
		{Entries: crashfs.Lose, Data: crashfs.Lose},
		{Entries: crashfs.Keep, Data: crashfs.Keep},
		{Entries: crashfs.Keep, Data: crashfs.Lose},
		{Entries: crashfs.Lose, Data: crashfs.Keep},
	}
	for i := range uint64(6) {
		cfgs = append(cfgs, crashfs.CloneConfig{Entries: crashfs.Random, Data: crashfs.Random,
			Rand: rand.New(rand.NewPCG(seed, i))})
	}
	return cfgs
}

// checkCrashState reopens one reboot of a crashed run, with the run's
// records, and returns what is wrong with it.
func checkCrashState(t *testing.T, run *crashRun, recs driver.Records, fsys *crashfs.FS) []string {
	t.Helper()
	ctx := context.Background()
	var bad []string
	ds, err := dirstore.OpenBodies(ctx, fsys, run.clock.Now)
	if err != nil {
		return []string{fmt.Sprintf("reopen: %v", err)}
	}
	defer ds.Close()
	store := workspace.New(ds, recs)
	xRef := artifact.RefOf(crashX)
	mayBeRotten := func(ref artifact.Ref) bool { return ref == xRef && run.tampered && !run.healed }

	// No visible partial or mismatched body.
	for info, err := range store.ListBodies(ctx) {
		if err != nil {
			return append(bad, fmt.Sprintf("list: %v", err))
		}
		ref, _ := artifact.ParseDigest(info.Key)
		if err := store.VerifyBody(ctx, ref, -1); err != nil && !mayBeRotten(ref) {
			bad = append(bad, fmt.Sprintf("visible body %s does not verify: %v", info.Key[:8], err))
		}
	}
	// No record whose body is not durable.
	for rec, err := range store.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			return append(bad, fmt.Sprintf("list records: %v", err))
		}
		err := store.VerifyBody(ctx, rec.Ref, rec.Size)
		if errors.Is(err, fs.ErrNotExist) || err != nil && !mayBeRotten(rec.Ref) {
			bad = append(bad, fmt.Sprintf("record of %s: body %v", rec.Ref.Hex()[:8], err))
		}
	}
	// Every acknowledged offload present.
	for _, a := range run.acks {
		oc, b, err := drivertest.Resolve(ctx, store, a.owner, a.ref, run.clock.Now())
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: rehydrate: %v", a.step, err))
		case oc == drivertest.Resolved && bytes.Equal(b, a.data):
		case oc == drivertest.Stale && mayBeRotten(a.ref):
		default:
			bad = append(bad, fmt.Sprintf("%s: acknowledged, after the crash %v", a.step, oc))
		}
	}
	// Leftovers swept, modes private.
	entries, _ := fsys.OpenFile("sha256", os.O_RDONLY, 0)
	if entries != nil {
		es, _ := entries.ReadDir(0)
		for _, e := range es {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				bad = append(bad, "temporary file left after reopen: "+e.Name())
			}
		}
		_ = entries.Close()
	}
	if unsafe, err := store.UnsafePermissions(ctx); err != nil || len(unsafe) > 0 {
		bad = append(bad, fmt.Sprintf("unsafe permissions %v, %v", unsafe, err))
	}
	return bad
}

// crashPoints returns the numbers of the operations of a complete run that
// change state: each is a crash point.
func crashPoints(log []crashfs.Op) []int {
	var out []int
	for _, op := range log {
		if op.Mutating {
			out = append(out, op.N)
		}
	}
	return out
}

// TestCrashConsistency crashes the workload at every state-changing step
// (every file create, write, fsync, chmod, time stamp, link, rename, removal
// and record commit) and explores ten reboots of each: unsynced state lost,
// kept, and mixed. In every one: no visible body that does not verify, no
// record whose body is absent, every acknowledged offload resolves to its
// bytes, no temporary file survives the reopen, no unsafe mode.
func TestCrashConsistency(t *testing.T) {
	full := runCrashWorkload(t, 0, false)
	defer full.recs.Close()
	if !full.completed {
		t.Fatal("the workload did not complete without a crash")
	}
	want := []string{"1 A writes X=created", "2 A again=existing",
		"3 B reuses X=created", "4 A streams Y=created",
		"6 A repairs X=replaced", "7 A touches Y=existing",
		"9 C reuses X=created"}
	if strings.Join(full.outcomes, ",") != strings.Join(want, ",") {
		t.Fatalf("workload outcomes %v, want %v", full.outcomes, want)
	}
	checkOrdering(t, full.log)
	points := append(crashPoints(full.log), 0)
	states, failures := 0, 0
	for _, n := range points {
		run := full
		if n != 0 {
			run = runCrashWorkload(t, n, false)
			sameSteps(t, full.log, run.log, n)
		}
		recs := snapshotRecords(t, run.recs)
		for i, cfg := range crashConfigs(uint64(n)) {
			cfg.Clock = run.clock.Now
			states++
			for _, msg := range checkCrashState(t, run, recs, run.image.Clone(cfg)) {
				failures++
				t.Errorf("crash at op %d (%s), reboot %d: %s", n, opAt(full.log, n), i, msg)
			}
		}
		if run != full {
			_ = run.recs.Close()
		}
		if failures > 20 {
			t.FailNow()
		}
	}
	kinds := map[string]int{}
	for _, op := range full.log {
		if op.Mutating {
			kinds[op.Kind]++
		}
	}
	t.Logf("%d crash points %v, %d crash states explored, %d failures", len(points), kinds, states, failures)
}

// TestCrashConsistencyCatchesMissingDirSync proves the crash test has teeth:
// a Commit that skips the directory fsync loses acknowledged bodies in some
// crash states, and breaks the body-before-record order.
func TestCrashConsistencyCatchesMissingDirSync(t *testing.T) {
	full := runCrashWorkload(t, 0, true)
	defer full.recs.Close()
	if err := orderingError(full.log); err == nil {
		t.Error("the ordering check accepted a commit without a directory fsync")
	}
	caught := 0
	for _, n := range append(crashPoints(full.log), 0) {
		run := full
		if n != 0 {
			run = runCrashWorkload(t, n, true)
		}
		cfg := crashfs.CloneConfig{Entries: crashfs.Lose, Data: crashfs.Lose, Clock: run.clock.Now}
		if len(checkCrashState(t, run, run.recs, run.image.Clone(cfg))) > 0 {
			caught++
		}
		if run != full {
			_ = run.recs.Close()
		}
	}
	if caught == 0 {
		t.Fatal("the mutant without a directory fsync passed every crash state")
	}
	t.Logf("mutant caught at %d crash points", caught)
}

// sameSteps fails unless a run that crashed at op n went through the same
// operations as the complete run up to there, so that each crash point is
// the step it is meant to be.
func sameSteps(t *testing.T, full, crashed []crashfs.Op, n int) {
	t.Helper()
	if len(crashed) != n-1 {
		t.Fatalf("crash at op %d after %d operations", n, len(crashed))
	}
	for i, op := range crashed {
		if op.Kind != full[i].Kind {
			t.Fatalf("crash run diverged at op %d: %s, complete run %s", op.N, op, full[i])
		}
	}
}

func opAt(log []crashfs.Op, n int) string {
	if n == 0 {
		return "after the end"
	}
	for _, op := range log {
		if op.N == n {
			return op.Kind + " " + op.Path
		}
	}
	return "?"
}

// checkOrdering fails unless every record is created after its body's
// publication was made durable by a directory fsync.
func checkOrdering(t *testing.T, log []crashfs.Op) {
	t.Helper()
	if err := orderingError(log); err != nil {
		t.Fatal(err)
	}
}

func orderingError(log []crashfs.Op) error {
	published, durable := map[string]bool{}, map[string]bool{}
	creates := 0
	for _, op := range log {
		switch {
		case (op.Kind == "link" || op.Kind == "rename") && strings.HasPrefix(op.To, "sha256/"):
			published[strings.TrimPrefix(op.To, "sha256/")] = true
		case op.Kind == "sync" && op.Path == "sha256":
			for k := range published {
				durable[k] = true
			}
			clear(published)
		case op.Kind == "record-create":
			creates++
			if !durable[op.Path] {
				return fmt.Errorf("op %d: record of %s created before its body was durable", op.N, op.Path[:8])
			}
		}
	}
	if creates == 0 {
		return errors.New("no record creation in the log")
	}
	return nil
}

// snapshotRecords copies the records committed in a run's database into
// memory, so that the ten reboots of one crash point, which share that
// database state, do not each query SQLite.
func snapshotRecords(t *testing.T, s *dirstore.Store) *memstore.Store {
	t.Helper()
	m := memstore.New()
	for rec, err := range s.ListRecords(context.Background(), driver.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.CreateRecord(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// scratchDir returns a temporary directory for a records database whose
// durability the test does not examine: in memory (/dev/shm) when the
// machine has it, so that the thousands of SQLite fsyncs cost nothing.
func scratchDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "hybridctx-test-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}
