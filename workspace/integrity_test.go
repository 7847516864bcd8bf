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
	if _, err := s.Record(ctx, ownerA, ref); err != nil {
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
