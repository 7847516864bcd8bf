package vfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOS(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	fsys := OS(root)
	defer fsys.Close()
	a, err := fsys.OpenFile("a", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := fsys.OpenFile("a", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// flock: one open file holds it; another, even in this process, not.
	if err := a.TryLock(); err != nil {
		t.Fatal(err)
	}
	if err := b.TryLock(); !IsLocked(err) {
		t.Fatalf("second TryLock = %v, want ErrLocked", err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := b.TryLock(); err != nil {
		t.Fatalf("TryLock after Unlock = %v", err)
	}
	when := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	if err := a.SetModTime(when); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "a"))
	if err != nil || !fi.ModTime().Equal(when) {
		t.Fatalf("mtime = %v, %v; want %v", fi.ModTime(), err, when)
	}
	ai, _ := a.Stat()
	li, _ := fsys.Lstat("a")
	if !SameFile(ai, li) {
		t.Fatal("SameFile of one file is false")
	}
	if err := fsys.Link("a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename("b", "c"); err != nil {
		t.Fatal(err)
	}
	ci, _ := fsys.Lstat("c")
	if !SameFile(ai, ci) {
		t.Fatal("a hard link is not the same file")
	}
	if err := fsys.Mkdir("d", 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := fsys.OpenFile(".", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	names, err := d.ReadDirNames(0)
	_ = d.Close()
	if err != nil || len(names) != 3 {
		t.Fatalf("ReadDirNames = %v, %v", names, err)
	}
	di, _ := fsys.Lstat("d")
	if SameFile(ai, di) || SameFile(nil, ai) {
		t.Fatal("SameFile of different files is true")
	}
	if err := fsys.Chmod("c", 0o400); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove("c"); err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	if err := a.TryLock(); err == nil {
		t.Fatal("TryLock on a closed file succeeded")
	}
	if err := a.SetModTime(when); err == nil {
		t.Fatal("SetModTime on a closed file succeeded")
	}
}
