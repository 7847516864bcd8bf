package dirstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

func TestRecordRoundTripAndCreateOnce(t *testing.T) {
	s := openNew(t)
	ctx := context.Background()
	used := time.Date(2025, 3, 4, 5, 6, 7, 891011121, time.UTC)
	rec := record(testOwner, "body", used)
	created, err := s.CreateRecord(ctx, rec)
	if err != nil || !created {
		t.Fatalf("CreateRecord = %v, %v; want true", created, err)
	}
	changed := rec
	changed.Description = "second"
	created, err = s.CreateRecord(ctx, changed)
	if err != nil || created {
		t.Fatalf("second CreateRecord = %v, %v; want false", created, err)
	}
	got, err := s.GetRecord(ctx, testOwner, rec.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if got != rec {
		t.Fatalf("GetRecord = %+v\nwant        %+v", got, rec)
	}
	if got.LastUsedAt.Location() != time.UTC {
		t.Fatal("times not UTC")
	}
}

func TestRecordsSurviveReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	s := openAt(t, dir)
	rec := record(testOwner, "durable", time.Now())
	if _, err := s.CreateRecord(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	s = openAt(t, dir)
	if _, err := s.GetRecord(context.Background(), testOwner, rec.Ref); err != nil {
		t.Fatal(err)
	}
}

func TestRecordAbsent(t *testing.T) {
	s := openNew(t)
	ctx := context.Background()
	ref := artifact.RefOf([]byte("nothing"))
	if _, err := s.GetRecord(ctx, testOwner, ref); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("GetRecord = %v", err)
	}
	if err := s.TouchRecord(ctx, testOwner, ref, time.Now()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("TouchRecord = %v", err)
	}
	if err := s.DeleteRecord(ctx, testOwner, ref); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DeleteRecord = %v", err)
	}
	// Another owner's record is absent for this owner.
	rec := record(testOwner, "nothing", time.Now())
	if _, err := s.CreateRecord(ctx, rec); err != nil {
		t.Fatal(err)
	}
	bob := artifact.Owner{User: "bob", Workflow: testOwner.Workflow, Session: testOwner.Session}
	if _, err := s.GetRecord(ctx, bob, ref); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("GetRecord(other owner) = %v", err)
	}
	if _, err := s.CreateRecord(ctx, artifact.Record{Owner: testOwner}); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("CreateRecord(zero ref) = %v", err)
	}
}

func TestTouchAndDeleteRecord(t *testing.T) {
	s := openNew(t)
	ctx := context.Background()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := record(testOwner, "touch me", t0)
	if _, err := s.CreateRecord(ctx, rec); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(90*time.Minute + 7)
	if err := s.TouchRecord(ctx, testOwner, rec.Ref, later); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRecord(ctx, testOwner, rec.Ref)
	if err != nil || !got.LastUsedAt.Equal(later) || !got.CreatedAt.Equal(rec.CreatedAt) {
		t.Fatalf("after touch: %+v, %v", got, err)
	}
	if err := s.DeleteRecord(ctx, testOwner, rec.Ref); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRecord(ctx, testOwner, rec.Ref); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("GetRecord after delete = %v", err)
	}
	if err := s.DeleteRecord(ctx, testOwner, rec.Ref); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second DeleteRecord = %v", err)
	}
}

func TestConcurrentCreateRecordOneWinner(t *testing.T) {
	s := openNew(t)
	for trial := range 5 {
		rec := record(testOwner, fmt.Sprintf("race %d", trial), time.Now())
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 32 {
			wg.Go(func() {
				<-start
				created, err := s.CreateRecord(context.Background(), rec)
				if err != nil {
					t.Error(err)
				}
				if created {
					wins.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := wins.Load(); n != 1 {
			t.Fatalf("trial %d: %d callers created the record, want exactly 1", trial, n)
		}
	}
}

// TestConcurrentOpenFreshWorkspace opens one new workspace from many Stores
// at once: the schema is created exactly once and every Store works.
func TestConcurrentOpenFreshWorkspace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	var wg sync.WaitGroup
	var wins atomic.Int32
	rec := record(testOwner, "shared", time.Now())
	for range 8 {
		wg.Go(func() {
			s, err := dirstore.Open(context.Background(), dir, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			created, err := s.CreateRecord(context.Background(), rec)
			if err != nil {
				t.Error(err)
			}
			if created {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d creators, want 1", n)
	}
}

func TestListRecordsFiltersAndOrder(t *testing.T) {
	s := openNew(t)
	ctx := context.Background()
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	bob := artifact.Owner{User: "bob", Workflow: "wf", Session: "s1"}
	aliceOtherSession := artifact.Owner{User: "alice", Workflow: "wf", Session: "s2"}
	recs := []artifact.Record{
		record(testOwner, "a", t0.Add(3*time.Hour)),
		record(testOwner, "b", t0.Add(1*time.Hour)),
		record(testOwner, "c", t0.Add(2*time.Hour)),
		record(bob, "a", t0.Add(30*time.Minute)),
		record(aliceOtherSession, "b", t0.Add(4*time.Hour)),
		// Same last-use time as "b": ordered by digest.
		record(testOwner, "d", t0.Add(1*time.Hour)),
	}
	for _, r := range recs {
		if _, err := s.CreateRecord(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	type key struct {
		user, body string
	}
	names := map[artifact.Ref]string{}
	for _, b := range []string{"a", "b", "c", "d"} {
		names[artifact.RefOf([]byte(b))] = b
	}
	list := func(q driver.Query) []key {
		t.Helper()
		var out []key
		for r, err := range s.ListRecords(ctx, q) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, key{r.Owner.User + "/" + r.Owner.Session, names[r.Ref]})
		}
		return out
	}
	bd := []string{"b", "d"}
	if keyOf([]byte("d")) < keyOf([]byte("b")) {
		bd = []string{"d", "b"}
	}
	check := func(name string, got []key, want ...key) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	check("all", list(driver.Query{}),
		key{"bob/s1", "a"}, key{"alice/s1", bd[0]}, key{"alice/s1", bd[1]},
		key{"alice/s1", "c"}, key{"alice/s1", "a"}, key{"alice/s2", "b"})
	check("owner", list(driver.Query{Owner: &testOwner}),
		key{"alice/s1", bd[0]}, key{"alice/s1", bd[1]}, key{"alice/s1", "c"}, key{"alice/s1", "a"})
	check("ref", list(driver.Query{Ref: artifact.RefOf([]byte("a"))}),
		key{"bob/s1", "a"}, key{"alice/s1", "a"})
	check("owner+ref", list(driver.Query{Owner: &testOwner, Ref: artifact.RefOf([]byte("b"))}),
		key{"alice/s1", "b"})
	check("unused since (strictly before)", list(driver.Query{UnusedSince: t0.Add(2 * time.Hour)}),
		key{"bob/s1", "a"}, key{"alice/s1", bd[0]}, key{"alice/s1", bd[1]})
	check("owner+unused since", list(driver.Query{Owner: &testOwner, UnusedSince: t0.Add(2*time.Hour + 1)}),
		key{"alice/s1", bd[0]}, key{"alice/s1", bd[1]}, key{"alice/s1", "c"})
	nobody := artifact.Owner{User: "nobody", Workflow: "wf", Session: "s1"}
	check("unknown owner", list(driver.Query{Owner: &nobody}))
}

// TestListRecordsStopsEarly breaks out of many listings; if rows were not
// closed the bounded connection pool would run dry and the next call would
// hang until the deadline.
func TestListRecordsStopsEarly(t *testing.T) {
	s := openNew(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 5 {
		if _, err := s.CreateRecord(ctx, record(testOwner, fmt.Sprint(i), time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		n := 0
		for _, err := range s.ListRecords(ctx, driver.Query{}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			break
		}
		if n != 1 {
			t.Fatalf("yielded %d records before stopping", n)
		}
	}
	if _, err := s.CreateRecord(ctx, record(testOwner, "after", time.Now())); err != nil {
		t.Fatal(err)
	}
	// Writing while a listing is open works too.
	for r, err := range s.ListRecords(ctx, driver.Query{Owner: &testOwner}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := s.TouchRecord(ctx, testOwner, r.Ref, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	cancelled, stop := context.WithCancel(ctx)
	stop()
	for _, err := range s.ListRecords(cancelled, driver.Query{}) {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ListRecords(cancelled) = %v", err)
		}
	}
}

// TestOddDirectoryName: the database URI escapes the directory name.
func TestOddDirectoryName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a b?c#d%20e&_txlock=x")
	s := openAt(t, dir)
	rec := record(testOwner, "odd", time.Now())
	if _, err := s.CreateRecord(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "records.db")); err != nil {
		t.Fatalf("records.db not in the workspace: %v", err)
	}
	db := rawDB(t, dir)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("records in %s: %d, %v", dir, n, err)
	}
}

// rawDB opens the workspace database directly, for inspection.
func rawDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", Path: filepath.Join(dir, "records.db")}
	db, err := sql.Open("sqlite", u.String()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestDatabaseSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	s := openAt(t, dir)
	db := rawDB(t, dir)
	var mode string
	var version int
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != 1 {
		t.Fatalf("user_version = %d, %v; want 1", version, err)
	}
	// A workspace written by a newer program is refused, not downgraded.
	_ = s.Close()
	if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	s, err := dirstore.Open(context.Background(), dir, nil)
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a newer schema version")
	}
	if !errors.Is(err, driver.ErrIncompatible) {
		t.Fatalf("Open of a newer schema version: %v, want driver.ErrIncompatible", err)
	}
}

// TestDamagedSchemaRefused: a database of the current version whose records
// table is not the one this program writes is refused when its statements
// are prepared, with an error that says so; nothing is created in its place.
func TestDamagedSchemaRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	s := openAt(t, dir)
	_ = s.Close()
	db := rawDB(t, dir)
	if _, err := db.Exec(`ALTER TABLE records RENAME COLUMN last_used_at TO used`); err != nil {
		t.Fatal(err)
	}
	s, err := dirstore.Open(context.Background(), dir, nil)
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a records table whose last_used_at is renamed")
	}
	if !strings.Contains(err.Error(), "prepare records") {
		t.Errorf("Open: %v, want an error preparing the records' statements", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info('records') WHERE name = 'last_used_at'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the refused table was changed: %d last_used_at columns, %v", n, err)
	}
}
