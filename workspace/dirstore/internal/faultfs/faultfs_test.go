package faultfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
)

func open(t *testing.T) (*FS, string) {
	t.Helper()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := Wrap(vfs.OS(root))
	t.Cleanup(func() { _ = f.Close() })
	return f, dir
}

func fds(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}

// TestEveryOperationFails runs each operation with a fault armed at it:
// the error wraps the errno, and the operation did not happen.
func TestEveryOperationFails(t *testing.T) {
	f, dir := open(t)
	h, err := f.OpenFile("a", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ops := map[string]func() error{
		"openfile": func() error { _, err := f.OpenFile("b", os.O_RDWR|os.O_CREATE, 0o600); return err },
		"mkdir":    func() error { return f.Mkdir("d", 0o700) },
		"chmod":    func() error { return f.Chmod("a", 0o400) },
		"lstat":    func() error { _, err := f.Lstat("a"); return err },
		"link":     func() error { return f.Link("a", "l") },
		"rename":   func() error { return f.Rename("a", "r") },
		"remove":   func() error { return f.Remove("a") },
		"read":     func() error { _, err := h.Read(make([]byte, 1)); return err },
		"readat":   func() error { _, err := h.ReadAt(make([]byte, 1), 0); return err },
		"stat":     func() error { _, err := h.Stat(); return err },
		"sync":     func() error { return h.Sync() },
		"fchmod":   func() error { return h.Chmod(0o400) },
		"settime":  func() error { return h.SetModTime(time.Now()) },
		"readdir":  func() error { _, err := h.ReadDir(1); return err },
		"names":    func() error { _, err := h.ReadDirNames(1); return err },
		"trylock":  func() error { return h.TryLock() },
		"unlock":   func() error { return h.Unlock() },
	}
	for name, op := range ops {
		f.Fail(f.Ops()+1, syscall.EROFS, false)
		if err := op(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s with a fault = %v", name, err)
		}
	}
	f.Fail(0, 0, false)
	for _, name := range []string{"b", "d", "l", "r"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a failed operation created %s", name)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a")); fi.Mode().Perm() != 0o600 {
		t.Errorf("a failed chmod changed the mode to %v", fi.Mode())
	}
	if f.Injected() != len(ops) {
		t.Errorf("Injected = %d, want %d", f.Injected(), len(ops))
	}
}

// TestWriteAndClose: a failed write writes half its buffer; a failed close
// still releases the descriptor.
func TestWriteAndClose(t *testing.T) {
	f, dir := open(t)
	before := fds(t)
	h, err := f.OpenFile("w", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Fail(f.Ops()+1, syscall.ENOSPC, false)
	if n, err := h.Write([]byte("abcdef")); n != 3 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("faulted Write = %d, %v", n, err)
	}
	f.Fail(f.Ops()+1, syscall.EIO, false)
	if err := h.Close(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("faulted Close = %v", err)
	}
	if n := fds(t); n != before {
		t.Fatalf("%d descriptors after a failed Close, %d before", n, before)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "w")); string(b) != "abc" {
		t.Fatalf("file = %q", b)
	}
}

// TestSticky: a sticky fault fails every later operation; Kinds records
// each one.
func TestSticky(t *testing.T) {
	f, _ := open(t)
	f.Fail(2, syscall.EROFS, true)
	if err := f.Mkdir("one", 0o700); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := f.Mkdir("x", 0o700); !errors.Is(err, syscall.EROFS) {
			t.Fatalf("sticky fault: %v", err)
		}
	}
	if k := f.Kinds(); !slices.Equal(k, []string{"mkdir", "mkdir", "mkdir", "mkdir"}) || f.Ops() != 4 || f.Injected() != 3 {
		t.Fatalf("kinds %v, ops %d, injected %d", k, f.Ops(), f.Injected())
	}
}
