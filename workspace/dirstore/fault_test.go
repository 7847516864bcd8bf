package dirstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/faultfs"
	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// openFaultyBodies opens the body half of a workspace in dir whose file
// operations go through a fault-injecting wrapper of the real file system.
func openFaultyBodies(t testing.TB, dir string, clk *fakeClock) (*dirstore.Store, *faultfs.FS, error) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	ff := faultfs.Wrap(vfs.OS(root))
	ds, err := dirstore.OpenBodies(context.Background(), ff, clk.Now)
	if err != nil {
		_ = root.Close()
	}
	return ds, ff, err
}

// openFaulty opens a workspace in dir whose file operations go through a
// fault-injecting wrapper of the real file system.
func openFaulty(t testing.TB, dir string, clk *fakeClock) (*dirstore.Store, *faultfs.FS, error) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	ff := faultfs.Wrap(vfs.OS(root))
	ds, err := dirstore.Open(context.Background(), dir, dirstore.WithFS(&dirstore.Options{Clock: clk.Now}, ff))
	if err != nil {
		_ = root.Close()
	}
	return ds, ff, err
}

// fdCount is the number of open file descriptors of this process.
func fdCount(t testing.TB) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}

// faultStep is one offload of the fault workload and what it returned.
type faultStep struct {
	name  string
	owner artifact.Owner
	data  []byte
	out   *hybridctx.OffloadResult
	// left is how many bytes a stream source still holds afterwards
	// (rewound after a failure, so all of them), or -1 for byte input.
	left int
}

// faultWorkload runs the offloads (fresh write, reuse by another owner,
// repair of a corrupt body, stream) and a GC over store, with faults armed
// in its file system; it never stops at a failure.
func faultWorkload(t testing.TB, dir string, store *workspace.Store, clk *fakeClock) []faultStep {
	t.Helper()
	ctx := context.Background()
	var steps []faultStep
	offload := func(name string, owner artifact.Owner, data []byte, stream bool) {
		b, _ := hybridctx.NewBinding(owner, store)
		o, _ := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 4096}, &hybridctx.OffloaderOptions{Clock: clk.Now})
		var out *hybridctx.OffloadResult
		var err error
		left := -1
		if stream {
			src := bytes.NewReader(data)
			out, err = o.OffloadReader(ctx, hybridctx.Call{Tool: "t", ID: name}, src)
			left = src.Len()
		} else {
			out, err = o.Offload(ctx, hybridctx.Call{Tool: "t", ID: name}, data)
		}
		if err != nil {
			t.Fatalf("%s: Offload returned an error instead of an outcome: %v", name, err)
		}
		steps = append(steps, faultStep{name, owner, data, out, left})
	}
	_, _, _, _ = drivertest.Put(ctx, store, bytes.NewReader(crashZ), nil) // an orphan for GC
	offload("A writes X", testOwner, crashX, false)
	offload("B reuses X", ownerB, crashX, false)
	rot(t, filepath.Join(dir, "sha256", keyOf(crashX)))
	offload("A repairs X", testOwner, crashX, false)
	offload("A streams Y", testOwner, crashY, true)
	clk.Add(48 * time.Hour)
	_, _ = store.CollectGarbage(ctx, &workspace.GCOptions{Clock: clk.Now})
	return steps
}

// rot corrupts the file at path in place, if it exists, behind the Store's
// back.
func rot(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err != nil {
		return
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteAt([]byte("ROT"), 7)
	_ = f.Close()
	_ = os.Chmod(path, 0o400)
}

// TestFaultInjection fails every file-system operation of the workload in
// turn, with EIO and ENOSPC (once) and EROFS (from then on, as a file system
// remounted read-only). Every offload then decides (never an error, never
// recovery_required), either as if nothing happened or as failed with its
// content kept; no descriptor and no goroutine leaks; and after a clean
// reopen no temporary file is left, every body verifies, every record's
// body is present and every acknowledged offload resolves to its bytes.
//
// The records live in memory here: only file operations are faulted, and
// the 400 runs would otherwise spend their time opening SQLite.
func TestFaultInjection(t *testing.T) {
	skipUnlessLong(t)
	defer goleak.VerifyNone(t)
	base := scratchDir(t)
	clk := newClock()
	// A clean run counts the operations (after Open) and warms up
	// whatever the runtime opens once.
	ds, ff, err := openFaultyBodies(t, filepath.Join(base, "dry"), clk)
	if err != nil {
		t.Fatal(err)
	}
	start := ff.Ops()
	store := workspace.New(ds, memstore.New())
	for _, st := range faultWorkload(t, filepath.Join(base, "dry"), store, clk) {
		if oc := st.out.Outcome(); oc != hybridctx.Offloaded && oc != hybridctx.ExistingReference {
			t.Fatalf("clean run: %s: %v", st.name, st.out.Reason())
		}
	}
	total := ff.Ops() - start
	kinds := ff.Kinds()[start:]
	_ = store.Close()
	fds := fdCount(t)

	faults := []struct {
		errno  syscall.Errno
		sticky bool
	}{{syscall.EIO, false}, {syscall.ENOSPC, false}, {syscall.EROFS, true}}
	injected, failed, tolerated := 0, 0, 0
	for k := 1; k <= total; k++ {
		for _, f := range faults {
			dir := filepath.Join(base, fmt.Sprintf("k%d-%s", k, f.errno))
			clk := newClock()
			ds, ff, err := openFaultyBodies(t, dir, clk)
			if err != nil {
				t.Fatal(err)
			}
			ff.Fail(ff.Ops()+k, f.errno, f.sticky)
			recs := memstore.New()
			store := workspace.New(ds, recs)
			steps := faultWorkload(t, dir, store, clk)
			_ = store.Close()
			injected += ff.Injected()
			where := fmt.Sprintf("%s at op %d (%s)", f.errno, k, kinds[k-1])
			for _, st := range steps {
				switch st.out.Outcome() {
				case hybridctx.Offloaded, hybridctx.ExistingReference:
				case hybridctx.Failed:
					failed++
					if st.left < 0 && !bytes.Equal(st.out.Content(), st.data) || st.left >= 0 && st.left != len(st.data) {
						t.Errorf("%s: %s failed and lost its content", where, st.name)
					}
				default:
					t.Errorf("%s: %s: %v (%v)", where, st.name, st.out.Outcome(), st.out.Reason())
				}
			}
			if n := fdCount(t); n > fds {
				t.Fatalf("%s: %d descriptors open, %d before: a leak", where, n, fds)
			}
			if ok := checkAfterFault(t, dir, recs, steps, where); ok {
				tolerated++
			}
		}
	}
	t.Logf("%d operations x %d faults: %d faults injected, %d offloads failed cleanly", total, len(faults), injected, failed)
}

// checkAfterFault reopens dir without faults and checks it; it reports
// whether every step had succeeded.
func checkAfterFault(t *testing.T, dir string, recs *memstore.Store, steps []faultStep, where string) bool {
	t.Helper()
	ctx := context.Background()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dirstore.OpenBodies(ctx, vfs.OS(root), time.Now)
	if err != nil {
		t.Fatalf("%s: reopen: %v", where, err)
	}
	store := workspace.New(ds, recs)
	defer store.Close()
	if tt := tempsIn(t, dir); len(tt) != 0 {
		t.Errorf("%s: temporary files left after reopen: %v", where, tt)
	}
	for info, err := range store.ListBodies(ctx) {
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		ref, _ := artifact.ParseDigest(info.Key)
		if err := store.VerifyBody(ctx, ref, -1); err != nil && ref != artifact.RefOf(crashX) {
			t.Errorf("%s: body %s: %v", where, info.Key[:8], err)
		}
	}
	for rec, err := range store.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if _, err := store.StatBody(ctx, rec.Ref); err != nil {
			t.Errorf("%s: a record points at an absent body: %v", where, err)
		}
	}
	all := true
	for _, st := range steps {
		oc := st.out.Outcome()
		if oc != hybridctx.Offloaded && oc != hybridctx.ExistingReference {
			all = false
			continue
		}
		if st.name == "A writes X" || st.name == "B reuses X" {
			continue // rotted afterwards on purpose
		}
		b, _ := hybridctx.NewBinding(st.owner, store)
		h, _ := hybridctx.NewRehydrator(b, nil)
		r, err := h.Rehydrate(ctx, hybridctx.Request{Reference: st.out.Ref.String(), Budget: 1 << 20})
		if err != nil || r.Outcome() != hybridctx.Resolved || !bytes.Equal(r.Segment.Bytes(), st.data) {
			t.Errorf("%s: %s acknowledged, then %v %v", where, st.name, r, err)
		}
	}
	return all
}

// TestFaultTypedErrors: a fault at any operation of a Store put, read or
// delete yields a *workspace.Error that wraps the errno (or nothing, when
// the failed operation was clean-up after the body was durable), and never
// a visible partial body.
func TestFaultTypedErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	base := scratchDir(t)
	data := bytes.Repeat([]byte("typed\n"), 100_000)
	ref := artifact.RefOf(data)
	run := func(dir string, arm func(ff *faultfs.FS)) (ops int, putErr, readErr, delErr error) {
		ds, ff, err := openFaulty(t, dir, newClock())
		if err != nil {
			t.Fatal(err)
		}
		store := workspace.New(ds, ds)
		defer store.Close()
		start := ff.Ops()
		arm(ff)
		ctx := context.Background()
		_, _, _, putErr = drivertest.Put(ctx, store, bytes.NewReader(data), nil)
		_, readErr = store.ReadVerified(ctx, ref, int64(len(data)), 0, 10)
		delErr = store.DeleteBody(ctx, ref)
		return ff.Ops() - start, putErr, readErr, delErr
	}
	total, _, _, _ := run(filepath.Join(base, "dry"), func(*faultfs.FS) {})
	typed := 0
	for k := 1; k <= total; k++ {
		dir := filepath.Join(base, fmt.Sprint(k))
		_, putErr, readErr, delErr := run(dir, func(ff *faultfs.FS) { ff.Fail(ff.Ops()+k, syscall.EIO, false) })
		for _, err := range []error{putErr, readErr, delErr} {
			if err == nil {
				continue
			}
			var we *workspace.Error
			if !errors.As(err, &we) || !errors.Is(err, syscall.EIO) && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, workspace.ErrCorrupt) {
				t.Errorf("fault at op %d: %v is not a *workspace.Error wrapping EIO", k, err)
				continue
			}
			typed++
		}
		ds, err := dirstore.Open(context.Background(), dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		for info, err := range ds.List(context.Background()) {
			if err == nil && info.Size != int64(len(data)) {
				t.Errorf("fault at op %d: a visible body of %d bytes", k, info.Size)
			}
		}
		_ = ds.Close()
	}
	t.Logf("%d operations faulted, %d typed errors", total, typed)
}

// TestFaultDuringOpen fails each operation of Open in turn: Open returns an
// error wrapping the errno (or succeeds, when only the best-effort sweep
// failed), and leaks no descriptor.
func TestFaultDuringOpen(t *testing.T) {
	defer goleak.VerifyNone(t)
	base := scratchDir(t)
	dir := filepath.Join(base, "probe")
	ds, ff, err := openFaulty(t, dir, newClock())
	if err != nil {
		t.Fatal(err)
	}
	_ = ds.Close()
	total := ff.Ops()
	fds := fdCount(t)
	for k := 1; k <= total+1; k++ {
		dir := filepath.Join(base, fmt.Sprint(k))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		// A leftover temporary file, so that the sweep has work.
		_ = os.MkdirAll(filepath.Join(dir, "sha256"), 0o700)
		_ = os.WriteFile(filepath.Join(dir, "sha256", ".tmp-leftover"), []byte("x"), 0o600)
		root, _ := os.OpenRoot(dir)
		ff := faultfs.Wrap(vfs.OS(root))
		ff.Fail(k, syscall.EIO, false)
		ds, err := dirstore.Open(context.Background(), dir, dirstore.WithFS(&dirstore.Options{}, ff))
		if err == nil {
			_ = ds.Close()
		} else {
			_ = root.Close()
			if !errors.Is(err, syscall.EIO) {
				t.Errorf("fault at op %d of Open: %v does not wrap EIO", k, err)
			}
		}
		if n := fdCount(t); n > fds {
			t.Fatalf("fault at op %d of Open: %d descriptors, %d before", k, n, fds)
		}
	}
}
