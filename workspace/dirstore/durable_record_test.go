package dirstore_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestCreateRecordSyncsBodiesItDidNotSeeDurable: a record for a body this
// Store committed itself costs no file operation (its directory fsync was
// seen to end); a record for a body published by another Store first syncs
// the body directory, and fails, writing nothing, when that fsync fails.
func TestCreateRecordSyncsBodiesItDidNotSeeDurable(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ws")
	ds, ff, err := openFaulty(t, dir, newClock())
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()

	own := "committed by this store"
	if err := put(t, ds, []byte(own), false); err != nil {
		t.Fatal(err)
	}
	before := ff.Ops()
	if created, err := ds.CreateRecord(ctx, record(testOwner, own, time.Now())); err != nil || !created {
		t.Fatalf("record of an own body: %t, %v", created, err)
	}
	if n := ff.Ops() - before; n != 0 {
		t.Fatalf("a record of a body seen durable took %d file operations, want 0", n)
	}

	other := "committed by another store"
	if err := put(t, openAt(t, dir), []byte(other), false); err != nil {
		t.Fatal(err)
	}
	rec := record(testOwner, other, time.Now())
	before = ff.Ops()
	ff.Fail(before+1, syscall.EIO, true)
	if _, err := ds.CreateRecord(ctx, rec); !errors.Is(err, syscall.EIO) {
		t.Fatalf("record while the body directory cannot be synced = %v, want EIO", err)
	}
	ff.Fail(0, 0, false)
	if _, err := ds.GetRecord(ctx, rec.Owner, rec.Ref); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after the failed sync the record is there: %v", err)
	}
	before = ff.Ops()
	if created, err := ds.CreateRecord(ctx, rec); err != nil || !created {
		t.Fatalf("record of another store's body: %t, %v", created, err)
	}
	if kinds := ff.Kinds()[before:]; !slices.Contains(kinds, "sync") {
		t.Fatalf("record of a body not seen durable: operations %v, want a directory fsync", kinds)
	}
}
