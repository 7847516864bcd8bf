package dirstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/workspace/driver"
)

func TestCommitCreateOnlyAndReplace(t *testing.T) {
	s := openNew(t)
	ctx := context.Background()
	data := []byte("hello, body")
	key := keyOf(data)

	if err := put(t, s, data, false); err != nil {
		t.Fatalf("first Commit: %v", err)
	}
	onDisk, err := os.ReadFile(filepath.Join(s.Dir(), "sha256", key))
	if err != nil || !bytes.Equal(onDisk, data) {
		t.Fatalf("body file = %q, %v; want %q", onDisk, err, data)
	}

	// A second create-only commit under the same key keeps the first body
	// and leaves the writer open for a retry.
	w, err := s.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	other := []byte("different bytes")
	if _, err := w.Write(other); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx, key, false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second create-only Commit = %v, want fs.ErrExist", err)
	}
	if got := readBody(t, s, key); !bytes.Equal(got, data) {
		t.Fatalf("existing body changed to %q", got)
	}
	if len(temps(t, s)) != 1 {
		t.Fatalf("temp file should be kept after fs.ErrExist, temps = %v", temps(t, s))
	}
	if err := w.Commit(ctx, key, false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("repeated create-only Commit = %v, want fs.ErrExist", err)
	}
	// Retry with replace: the written bytes take the key's place.
	if err := w.Commit(ctx, key, true); err != nil {
		t.Fatalf("replace Commit: %v", err)
	}
	if got := readBody(t, s, key); !bytes.Equal(got, other) {
		t.Fatalf("after replace body = %q, want %q", got, other)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort after Commit: %v", err)
	}
	if got := readBody(t, s, key); !bytes.Equal(got, other) {
		t.Fatal("Abort after Commit removed the body")
	}
	if tt := temps(t, s); len(tt) != 0 {
		t.Fatalf("temps left: %v", tt)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("Write after Commit succeeded")
	}
	if err := w.Commit(ctx, key, true); err == nil {
		t.Fatal("Commit after Commit succeeded")
	}
}

func TestAbortCleansUp(t *testing.T) {
	s := openNew(t)
	ctx := context.Background()
	w, err := s.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("discard me")); err != nil {
		t.Fatal(err)
	}
	if len(temps(t, s)) != 1 {
		t.Fatalf("expected one temp file while writing, got %v", temps(t, s))
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("second Abort: %v", err)
	}
	if tt := temps(t, s); len(tt) != 0 {
		t.Fatalf("temps left after Abort: %v", tt)
	}
	if err := w.Commit(ctx, keyOf([]byte("discard me")), false); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	if _, err := s.Stat(ctx, keyOf([]byte("discard me"))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("aborted body visible: %v", err)
	}
	// An aborted writer after a refused create-only commit also cleans up.
	data := []byte("present")
	if err := put(t, s, data, false); err != nil {
		t.Fatal(err)
	}
	w, _ = s.NewWriter(ctx)
	_, _ = w.Write(data)
	if err := w.Commit(ctx, keyOf(data), false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Commit = %v, want fs.ErrExist", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if tt := temps(t, s); len(tt) != 0 {
		t.Fatalf("temps left after Abort: %v", tt)
	}
}

func TestCommitHonoursContext(t *testing.T) {
	s := openNew(t)
	data := []byte("cancelled")
	w, err := s.NewWriter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Commit(ctx, keyOf(data), false); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit = %v, want context.Canceled", err)
	}
	if _, err := s.Stat(context.Background(), keyOf(data)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("body visible after cancelled Commit: %v", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if tt := temps(t, s); len(tt) != 0 {
		t.Fatalf("temps left: %v", tt)
	}
	// Every method checks ctx first.
	key := keyOf(data)
	if _, err := s.NewWriter(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("NewWriter = %v", err)
	}
	if _, err := s.Open(ctx, key); !errors.Is(err, context.Canceled) {
		t.Errorf("Open = %v", err)
	}
	if _, err := s.Stat(ctx, key); !errors.Is(err, context.Canceled) {
		t.Errorf("Stat = %v", err)
	}
	if err := s.Delete(ctx, key); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete = %v", err)
	}
	for _, err := range s.List(ctx) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("List = %v", err)
		}
	}
	if _, err := s.Lock(ctx, key); !errors.Is(err, context.Canceled) {
		t.Errorf("Lock = %v", err)
	}
	if _, err := s.UnsafePermissions(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("UnsafePermissions = %v", err)
	}
}

func TestReadStatDeleteList(t *testing.T) {
	s := openNew(t)
	ctx := context.Background()
	bodies := [][]byte{[]byte("one"), []byte("two two"), {}}
	want := map[string]int64{}
	for _, b := range bodies {
		if err := put(t, s, b, false); err != nil {
			t.Fatal(err)
		}
		want[keyOf(b)] = int64(len(b))
	}
	// A temp file of a writer in progress is not listed.
	w, _ := s.NewWriter(ctx)
	defer w.Abort()

	for key, size := range want {
		info, err := s.Stat(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if info.Key != key || info.Size != size || info.ModTime.IsZero() || info.Version == "" {
			t.Fatalf("Stat = %+v", info)
		}
	}
	got := map[string]int64{}
	for info, err := range s.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got[info.Key] = info.Size
	}
	if len(got) != len(want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("List = %v, want %v", got, want)
		}
	}
	n := 0
	for range s.List(ctx) {
		n++
		break
	}
	if n != 1 {
		t.Fatal("List did not stop")
	}

	key := keyOf(bodies[0])
	r, err := s.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	ra, ok := r.(driver.RangeReader)
	if !ok {
		t.Fatal("reader is not a RangeReader")
	}
	buf := make([]byte, 2)
	if n, err := ra.ReadAt(buf, 1); n != 2 || string(buf) != "ne" {
		t.Fatalf("ReadAt = %d %q %v", n, buf, err)
	}
	if b, _ := io.ReadAll(r); string(b) != "one" {
		t.Fatalf("Read after ReadAt = %q", b)
	}
	if r.Info().Size != 3 || r.Info().Key != key {
		t.Fatalf("Info = %+v", r.Info())
	}
	_ = r.Close()

	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, key); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second Delete = %v", err)
	}
	if _, err := s.Stat(ctx, key); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat deleted = %v", err)
	}
	if _, err := s.Open(ctx, key); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open deleted = %v", err)
	}
}

func TestRestatDetectsChange(t *testing.T) {
	s := openNew(t)
	ctx := context.Background()
	data := []byte("stable bytes")
	key := keyOf(data)
	if err := put(t, s, data, false); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rs, ok := r.(driver.Restatter)
	if !ok {
		t.Fatal("reader is not a Restatter")
	}
	before, err := rs.Restat()
	if err != nil {
		t.Fatal(err)
	}
	if before != r.Info() {
		t.Fatalf("Restat of an unchanged body = %+v, Info = %+v", before, r.Info())
	}
	path := filepath.Join(s.Dir(), "sha256", key)
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte("!"))
	_ = f.Close()
	after, err := rs.Restat()
	if err != nil {
		t.Fatal(err)
	}
	if after.Size != before.Size+1 || after.Version == before.Version {
		t.Fatalf("Restat after change = %+v, before = %+v", after, before)
	}
}

// TestTempSweepOnOpen: a temporary body whose writer is gone (nobody holds
// its lock) is swept at the next Open, however young; one whose writer is
// alive (it holds the lock) is kept, however old.
func TestTempSweepOnOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	s := openAt(t, dir)
	data := []byte("survives leftovers")
	old := filepath.Join(dir, "sha256", ".tmp-leftover-old")
	fresh := filepath.Join(dir, "sha256", ".tmp-leftover-fresh")
	for _, p := range []string{old, fresh} {
		// A leftover with the very bytes a later put writes.
		if err := os.WriteFile(p, data[:5], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	// Leftovers never disturb a later put.
	if err := put(t, s, data, false); err != nil {
		t.Fatal(err)
	}
	if got := readBody(t, s, keyOf(data)); !bytes.Equal(got, data) {
		t.Fatalf("body = %q", got)
	}
	// A live writer, with an old modification time.
	w, err := s.NewWriter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.Write([]byte("in progress")); err != nil {
		t.Fatal(err)
	}
	live := temps(t, s)
	if len(live) != 3 {
		t.Fatalf("temps = %v, want the two leftovers and the live one", live)
	}
	for _, name := range live {
		_ = os.Chtimes(filepath.Join(dir, "sha256", name), past, past)
	}

	openAt(t, dir)
	left := temps(t, s)
	if len(left) != 1 || filepath.Join(dir, "sha256", left[0]) == old || filepath.Join(dir, "sha256", left[0]) == fresh {
		t.Fatalf("after reopen temps = %v, want only the live writer's", left)
	}
	key := keyOf([]byte("in progress"))
	if err := w.Commit(context.Background(), key, false); err != nil {
		t.Fatalf("the live writer lost its file: %v", err)
	}
	if got := readBody(t, s, key); string(got) != "in progress" {
		t.Fatalf("body = %q", got)
	}
	if tt := temps(t, s); len(tt) != 0 {
		t.Fatalf("temps left: %v", tt)
	}
}

func TestModes(t *testing.T) {
	s := openNew(t)
	checkModes(t, s)
}

// TestModesUmaskZero shows that the modes do not come from the umask: the
// Store never asks for group or other bits.
func TestModesUmaskZero(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	s := openNew(t)
	checkModes(t, s)
}

// checkModes commits a body, creates a record and takes a lock, then checks
// every mode with Lstat.
func checkModes(t *testing.T, s interface {
	driver.Bodies
	driver.Records
	driver.Locker
	driver.Checker
	Dir() string
}) {
	t.Helper()
	ctx := context.Background()
	data := []byte("private")
	if err := put(t, s, data, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRecord(ctx, record(testOwner, string(data), time.Now())); err != nil {
		t.Fatal(err)
	}
	unlock, err := s.Lock(ctx, keyOf(data))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	dir := s.Dir()
	want := map[string]fs.FileMode{
		".":                     0o700,
		"sha256":                0o700,
		"locks":                 0o700,
		"sha256/" + keyOf(data): 0o400,
		"records.db":            0o600,
		"locks/" + keyOf(data):  0o600,
	}
	for _, extra := range []string{"records.db-wal", "records.db-shm"} {
		if _, err := os.Lstat(filepath.Join(dir, extra)); err == nil {
			want[extra] = 0o600
		}
	}
	if _, ok := want["records.db-wal"]; !ok {
		t.Error("records.db-wal missing: is the database in WAL mode?")
	}
	for name, m := range want {
		if got := perm(t, filepath.Join(dir, name)); got != m {
			t.Errorf("mode of %s = %v, want %v", name, got, m)
		}
	}
	unsafe, err := s.UnsafePermissions(ctx)
	if err != nil || len(unsafe) != 0 {
		t.Errorf("UnsafePermissions = %v, %v; want none", unsafe, err)
	}
}

func TestUnsafePermissions(t *testing.T) {
	s := openNew(t)
	ctx := context.Background()
	data := []byte("exposed")
	if err := put(t, s, data, false); err != nil {
		t.Fatal(err)
	}
	got, err := s.UnsafePermissions(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("fresh workspace: UnsafePermissions = %v, %v", got, err)
	}
	body := "sha256/" + keyOf(data)
	if err := os.Chmod(filepath.Join(s.Dir(), body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err = s.UnsafePermissions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{".", body}; !slices.Equal(got, want) {
		t.Fatalf("UnsafePermissions = %v, want %v", got, want)
	}
}
