package dirstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// TestWALDeletedUnderARunningProcess deletes records.db-wal while a Store
// holds the database: another Open says so (ErrWALDeleted), the holder's
// integrity check names the file, the holder keeps working, and once it
// closes every record, including those written after the deletion, is there.
func TestWALDeletedUnderARunningProcess(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ws")
	holder, err := dirstore.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	owner := artifact.Owner{User: "u", Workflow: "w", Session: "s"}
	create := func(s *dirstore.Store, i int) {
		t.Helper()
		now := time.Now()
		rec := artifact.Record{Owner: owner, Ref: artifact.RefOf([]byte{byte(i)}), Size: 1, Kind: "binary", CreatedAt: now, LastUsedAt: now}
		if _, err := s.CreateRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		create(holder, i)
	}
	if d, err := holder.CheckIntegrity(ctx); err != nil || len(d) != 0 {
		t.Fatalf("before: %v %v", d, err)
	}
	if err := os.Remove(filepath.Join(dir, "records.db-wal")); err != nil {
		t.Fatal(err)
	}
	if _, err := dirstore.Open(ctx, dir, nil); !errors.Is(err, dirstore.ErrWALDeleted) || driver.Category(err) != driver.ErrDetached {
		t.Fatalf("Open by another process: %v, want ErrWALDeleted in driver.ErrDetached", err)
	}
	d, err := holder.CheckIntegrity(ctx)
	if err != nil || len(d) != 1 || d[0].Part != "records.db-wal" {
		t.Fatalf("holder's check: %v %v, want records.db-wal named", d, err)
	}
	create(holder, 5)
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	after := openAt(t, dir)
	n := 0
	for _, err := range after.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 6 {
		t.Fatalf("%d records after the holder closed, want 6: records lost", n)
	}
	if d, err := after.CheckIntegrity(ctx); err != nil || len(d) != 0 {
		t.Fatalf("after: %v %v", d, err)
	}
}
