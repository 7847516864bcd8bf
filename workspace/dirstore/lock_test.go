package dirstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/faultfs"
	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
)

// TestLockFileLivesWhileHeld: the lock file exists only while the lock is
// held, and goroutines contending for it (each through its own descriptor,
// while names are removed and re-created) still exclude one another.
func TestLockFileLivesWhileHeld(t *testing.T) {
	s := openNew(t)
	ctx := context.Background()
	key := keyOf([]byte("contended"))
	path := filepath.Join(s.Dir(), "locks", key)
	unlock, err := s.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("lock file while held: %v", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lock file after unlock: %v", err)
	}

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		holders int
		counter int
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				unlock, err := s.Lock(ctx, key)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				holders++
				if holders != 1 {
					t.Error("two holders at once")
				}
				mu.Unlock()
				n := counter
				time.Sleep(10 * time.Microsecond)
				counter = n + 1
				mu.Lock()
				holders--
				mu.Unlock()
				if err := unlock(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if counter != 8*40 {
		t.Fatalf("counter = %d, want %d: the lock did not exclude", counter, 8*40)
	}
	if es, _ := os.ReadDir(filepath.Join(s.Dir(), "locks")); len(es) != 0 {
		t.Fatalf("lock files left: %d", len(es))
	}
}

// TestSweepNeverTakesALiveWriter commits bodies while other Stores are
// opened on the same directory over and over (each Open sweeps): no writer
// ever loses its temporary file.
func TestSweepNeverTakesALiveWriter(t *testing.T) {
	dir := filepath.Join(scratchDir(t), "ws")
	s := openAt(t, dir)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	opens := 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			o, err := dirstore.Open(context.Background(), dir, nil)
			if err != nil {
				t.Error(err)
				return
			}
			_ = o.Close()
			opens++
		}
	}()
	for i := range 200 {
		data := []byte(strings.Repeat("w", i+1))
		if err := put(t, s, data, false); err != nil {
			t.Fatalf("commit %d while sweeping: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
	if tt := temps(t, s); len(tt) != 0 {
		t.Fatalf("temps left: %v", tt)
	}
	t.Logf("200 commits against %d sweeping opens", opens)
}

// TestSweepFallsBackToAge: where the lock of a leftover cannot be tried,
// the sweep removes it only once older than an hour.
func TestSweepFallsBackToAge(t *testing.T) {
	for _, age := range []time.Duration{2 * time.Hour, time.Minute} {
		dir := filepath.Join(t.TempDir(), "ws")
		s := openAt(t, dir)
		_ = s.Close()
		leftover := filepath.Join(dir, "sha256", ".tmp-leftover")
		if err := os.WriteFile(leftover, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		past := time.Now().Add(-age)
		_ = os.Chtimes(leftover, past, past)
		// Find the sweep's lock attempt, then fail it.
		root, _ := os.OpenRoot(dir)
		probe := faultfs.Wrap(vfs.OS(root))
		ds, err := dirstore.Open(context.Background(), dir, dirstore.WithFS(&dirstore.Options{}, probe))
		if err != nil {
			t.Fatal(err)
		}
		_ = ds.Close()
		n := slices.Index(probe.Kinds(), "trylock") + 1
		if n == 0 {
			t.Fatal("the sweep tried no lock")
		}
		if err := os.WriteFile(leftover, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = os.Chtimes(leftover, past, past)
		root, _ = os.OpenRoot(dir)
		ff := faultfs.Wrap(vfs.OS(root))
		ff.Fail(n, syscall.ENOLCK, false)
		ds, err = dirstore.Open(context.Background(), dir, dirstore.WithFS(&dirstore.Options{}, ff))
		if err != nil {
			t.Fatal(err)
		}
		_ = ds.Close()
		_, err = os.Lstat(leftover)
		if gone := errors.Is(err, fs.ErrNotExist); gone != (age > time.Hour) {
			t.Fatalf("leftover %v old: removed = %v", age, gone)
		}
	}
}

// permRecorder records the permission bits of everything a Store creates
// or changes, to show that nothing is ever created wider than private and
// narrowed afterwards.
type permRecorder struct {
	vfs.FS
	mu    sync.Mutex
	perms map[string]fs.FileMode
}

func (p *permRecorder) note(op, name string, perm fs.FileMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.perms[op+" "+name] = perm
}

func (p *permRecorder) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if flag&os.O_CREATE != 0 {
		p.note("create", name, perm)
	}
	f, err := p.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &permFile{File: f, p: p, name: name}, nil
}

func (p *permRecorder) Mkdir(name string, perm fs.FileMode) error {
	p.note("mkdir", name, perm)
	return p.FS.Mkdir(name, perm)
}

func (p *permRecorder) Chmod(name string, mode fs.FileMode) error {
	p.note("chmod", name, mode)
	return p.FS.Chmod(name, mode)
}

type permFile struct {
	vfs.File
	p    *permRecorder
	name string
}

func (f *permFile) Chmod(mode fs.FileMode) error {
	f.p.note("fchmod", f.name, mode)
	return f.File.Chmod(mode)
}

// TestNothingCreatedWide: every directory and file the Store creates is
// created with owner-only bits, and every later mode change only narrows;
// a workspace that was world-readable before Open stays reported.
func TestNothingCreatedWide(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	root, _ := os.OpenRoot(dir)
	rec := &permRecorder{FS: vfs.OS(root), perms: map[string]fs.FileMode{}}
	s, err := dirstore.Open(context.Background(), dir, dirstore.WithFS(&dirstore.Options{}, rec))
	if err != nil {
		t.Fatal(err)
	}
	checkModes(t, s)
	_ = s.Close()
	for what, perm := range rec.perms {
		if perm&0o077 != 0 {
			t.Errorf("%s with mode %v", what, perm)
		}
	}
	for _, want := range []string{"mkdir sha256", "mkdir locks", "create records.db", "fchmod records.db"} {
		if _, ok := rec.perms[want]; !ok {
			t.Errorf("no %q recorded: %v", want, rec.perms)
		}
	}
	// An existing workspace opened world-readable is reported, not fixed
	// behind the operator's back.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s2 := openAt(t, dir)
	got, err := s2.UnsafePermissions(context.Background())
	if err != nil || !slices.Equal(got, []string{"."}) {
		t.Fatalf("UnsafePermissions of a 0755 workspace = %v, %v", got, err)
	}
}
