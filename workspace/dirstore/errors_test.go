package dirstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// TestErrorCategories provokes the file-system causes a directory
// workspace meets (a full device, a read-only file system, an I/O error,
// a refused access) in a body's Commit and checks that each error is in
// its portable category alone, with the operating system's error kept.
func TestErrorCategories(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		errno syscall.Errno
		want  error
	}{
		{syscall.ENOSPC, driver.ErrNoSpace},
		{syscall.EDQUOT, driver.ErrNoSpace},
		{syscall.EROFS, driver.ErrReadOnly},
		{syscall.EIO, driver.ErrIO},
		{syscall.EACCES, driver.ErrPermission},
	}
	for _, c := range cases {
		t.Run(c.errno.Error(), func(t *testing.T) {
			ds, ff, err := openFaultyBodies(t, filepath.Join(t.TempDir(), "ws"), newClock())
			if err != nil {
				t.Fatal(err)
			}
			w, err := ds.NewWriter(ctx)
			if err == nil {
				_, err = w.Write([]byte("body"))
			}
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			// The next file operation, Commit's first, fails from then on.
			ff.Fail(ff.Ops()+1, c.errno, true)
			err = w.Commit(ctx, "3a6eb0790f39ac87c94f3856b2dd2c5d110e6811602261a9a923d3bb23adc8b7", false)
			if err == nil {
				t.Fatal("Commit succeeded")
			}
			if got := driver.Category(err); got != c.want {
				t.Fatalf("Commit under %v: %v in category %v, want %v", c.errno, err, got, c.want)
			}
			for _, other := range driver.Categories() {
				if other != c.want && errors.Is(err, other) {
					t.Fatalf("Commit under %v: %v also in %v", c.errno, err, other)
				}
			}
			if !errors.Is(err, c.errno) {
				t.Fatalf("Commit under %v: %v lost the operating system's error", c.errno, err)
			}
		})
	}
}

// TestDamagedDatabaseCategory checks that a records database that is not
// a SQLite file at all is reported as driver.ErrDamaged.
func TestDamagedDatabaseCategory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	s, err := dirstore.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 8192)
	for i := range junk {
		junk[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(filepath.Join(dir, "records.db"), junk, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(dir, "records.db-wal"))
	_ = os.Remove(filepath.Join(dir, "records.db-shm"))
	s, err = dirstore.Open(context.Background(), dir, nil)
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a database that is not one")
	}
	if got := driver.Category(err); got != driver.ErrDamaged {
		t.Fatalf("Open of a damaged database: %v in category %v, want driver.ErrDamaged", err, got)
	}
}

// TestNotFoundCategory checks that a missing workspace (MustExist) is in
// driver.ErrNotFound and still wraps ErrNoWorkspace.
func TestNotFoundCategory(t *testing.T) {
	_, err := dirstore.Open(context.Background(), filepath.Join(t.TempDir(), "none"), &dirstore.Options{MustExist: true})
	if !errors.Is(err, dirstore.ErrNoWorkspace) || driver.Category(err) != driver.ErrNotFound {
		t.Fatalf("Open of no workspace: %v, want ErrNoWorkspace in driver.ErrNotFound", err)
	}
}
