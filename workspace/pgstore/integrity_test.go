package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

// TestIntegrityCheckAndReferenceScan: without amcheck the check is skipped
// (errors.ErrUnsupported, and Scrub says the database was not checked);
// with amcheck installed in the workspace's schema every index passes; the
// reference scan yields every record; and gc trusts both.
func TestIntegrityCheckAndReferenceScan(t *testing.T) {
	s, u := openNew(t, nil)
	ctx := context.Background()
	st := workspace.New(s, s)
	if _, err := s.CheckIntegrity(ctx); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("without amcheck: %v, want ErrUnsupported", err)
	}
	if rep, err := st.Scrub(ctx, nil); err != nil || rep.DatabaseChecked {
		t.Fatalf("scrub without amcheck: %+v, %v; want the database not checked", rep, err)
	}
	want := map[string]time.Time{}
	for i := range 20 {
		data := []byte(fmt.Sprint("body ", i))
		ref, _, _, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil)
		if err != nil {
			t.Fatal(err)
		}
		rec := record(ref, len(data))
		rec.LastUsedAt = t0.Add(time.Duration(i) * time.Minute)
		if _, err := st.CreateRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
		want[ref.Hex()] = rec.LastUsedAt
	}
	n := 0
	for ref, err := range s.ScanReferences(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := want[ref.Key]; !ok || !w.Equal(ref.LastUsedAt) {
			t.Fatalf("scan yielded %s at %v", ref.Key, ref.LastUsedAt)
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("scan yielded %d records, want %d", n, len(want))
	}

	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE EXTENSION amcheck SCHEMA `+pgx.Identifier{schemaOf(t, conn)}.Sanitize()); err != nil {
		t.Skipf("amcheck cannot be installed here: %v", err)
	}
	d, err := s.CheckIntegrity(ctx)
	if err != nil || len(d) != 0 {
		t.Fatalf("sound indexes: %v, %v", d, err)
	}
	rep, err := st.Scrub(ctx, nil)
	if err != nil || !rep.DatabaseChecked || rep.Damaged() {
		t.Fatalf("scrub with amcheck: %+v, %v", rep, err)
	}
	gc, err := st.CollectGarbage(ctx, &workspace.GCOptions{Clock: func() time.Time { return time.Now().Add(48 * time.Hour) }})
	if err != nil || gc.BodiesDeleted != 0 || gc.BodiesReferenced != 20 {
		t.Fatalf("gc: %+v, %v", gc, err)
	}
}

func schemaOf(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var name string
	if err := conn.QueryRow(context.Background(), `SELECT current_schema()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}
