package workspace_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// lyingIndex is a records driver whose per-body lookups find nothing, as a
// damaged digest index would, while a full listing still yields every
// record.
type lyingIndex struct{ *memstore.Store }

func (l lyingIndex) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	if !q.Ref.IsZero() {
		return func(func(artifact.Record, error) bool) {}
	}
	return l.Store.ListRecords(ctx, q)
}

// damagedDB adds an integrity check that reports damage.
type damagedDB struct{ lyingIndex }

func (damagedDB) CheckIntegrity(context.Context) ([]driver.Damage, error) {
	return []driver.Damage{{Part: "records.db", Problem: "index does not match its table"}}, nil
}

func TestGCNotFooledByALyingIndex(t *testing.T) {
	ctx := context.Background()
	m := memstore.New()
	s := workspace.New(m, lyingIndex{m})
	ref := offloadAs(t, s, ownerA, bodyOf(7, 300))
	later := func() time.Time { return time.Now().Add(10 * day) }
	rep, err := s.CollectGarbage(ctx, &workspace.GCOptions{Clock: later})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BodiesDeleted != 0 || rep.BodiesReferenced != 1 {
		t.Fatalf("report %+v: a referenced body was collected", rep)
	}
	if _, err := s.StatBody(ctx, ref); err != nil {
		t.Fatalf("body gone: %v", err)
	}
}

func TestGCRefusesDamagedDatabaseScrubReportsIt(t *testing.T) {
	ctx := context.Background()
	m := memstore.New()
	s := workspace.New(m, damagedDB{lyingIndex{m}})
	ref := offloadAs(t, s, ownerA, bodyOf(8, 300))
	mustPut(t, s, bodyOf(9, 300)) // an orphan, old enough below
	later := func() time.Time { return time.Now().Add(10 * day) }
	for _, dry := range []bool{false, true} {
		rep, err := s.CollectGarbage(ctx, &workspace.GCOptions{Clock: later, MaxAge: time.Hour, DryRun: dry})
		if !errors.Is(err, workspace.ErrDamaged) || !strings.Contains(err.Error(), "records.db") {
			t.Fatalf("dry run %v: %v, want ErrDamaged naming the part", dry, err)
		}
		if rep != (workspace.GCReport{}) {
			t.Fatalf("dry run %v: %+v, want nothing done", dry, rep)
		}
	}
	n := 0
	for _, err := range s.ListBodies(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d bodies left, want 2", n)
	}
	if _, err := s.GetRecord(ctx, ownerA, ref); err != nil {
		t.Fatalf("record expired by a refused gc: %v", err)
	}
	sr, err := s.Scrub(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sr.DatabaseChecked || len(sr.Database) != 1 || !sr.Damaged() {
		t.Fatalf("scrub %+v: want the damage reported", sr)
	}
}

func TestScrubReportsAndRepairs(t *testing.T) {
	ctx := context.Background()
	m := memstore.New()
	refuse := artifact.RefOf(bodyOf(3, 100))
	h := &drivertest.Hooks{Delete: func(_ context.Context, key string) error {
		if key == refuse.Hex() {
			return errors.New("directory not empty")
		}
		return nil
	}}
	s, _ := over(m, m, h)
	kept := offloadAs(t, s, ownerA, bodyOf(1, 100))
	rotten := offloadAs(t, s, ownerA, bodyOf(2, 100))
	mustPut(t, s, bodyOf(3, 100))
	orphan := mustPut(t, s, bodyOf(4, 100))
	gone := offloadAs(t, s, ownerB, bodyOf(5, 100))
	drivertest.Overwrite(m, rotten.Hex(), bodyOf(9, 100))
	drivertest.Overwrite(m, refuse.Hex(), bodyOf(8, 100))
	if err := s.DeleteBody(ctx, gone); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Scrub(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bodies != 4 || len(rep.Corrupt) != 2 || len(rep.Missing) != 1 || rep.Missing[0] != gone ||
		rep.Orphaned != 2 || len(rep.Repaired) != 0 || rep.PermissionsChecked || rep.DatabaseChecked || !rep.Damaged() {
		t.Fatalf("report %+v", rep)
	}
	rep, err = s.Scrub(ctx, &workspace.ScrubOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repaired) != 1 || rep.Repaired[0] != rotten || len(rep.RepairFailed) != 1 || rep.RepairFailed[0] != refuse {
		t.Fatalf("repair: %+v", rep)
	}
	if _, err := s.StatBody(ctx, kept); err != nil {
		t.Fatalf("a sound body was touched: %v", err)
	}
	if _, err := s.StatBody(ctx, orphan); err != nil {
		t.Fatalf("an orphan was deleted: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Scrub(cctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled scrub: %v", err)
	}
	_ = s.Close()
	if _, err := s.Scrub(ctx, nil); !errors.Is(err, workspace.ErrClosed) {
		t.Fatalf("scrub of a closed store: %v", err)
	}
}
