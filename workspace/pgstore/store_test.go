package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
	"github.com/hybridctx/hybridctx/workspace/pgstore/pgtest"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// TestMigrationConcurrentStart opens one fresh schema from several workers
// at once: every Open succeeds and the tables are created once.
func TestMigrationConcurrentStart(t *testing.T) {
	u := pgtest.NewSchema(t)
	ctx := context.Background()
	const workers = 6
	var wg sync.WaitGroup
	errs := make([]error, workers)
	start := make(chan struct{})
	for i := range workers {
		wg.Go(func() {
			<-start
			s, err := pgstore.Open(ctx, u, nil)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: Open: %v", i, err)
		}
	}
	if v := queryInt(t, u, `SELECT value::int FROM hybridctx_meta WHERE key = 'schema_version'`); v != pgstore.SchemaVersion {
		t.Fatalf("schema_version %d, want %d", v, pgstore.SchemaVersion)
	}
	if n := queryInt(t, u, `SELECT count(*) FROM pg_constraint WHERE conname = 'hybridctx_records_body'
		AND connamespace = current_schema()::regnamespace`); n != 1 {
		t.Fatalf("%d foreign keys, want 1", n)
	}
	// Reopening is a no-op.
	s, err := pgstore.Open(ctx, u, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s.Close()
}

// TestSchemaRefused covers the schemas Open must not use.
func TestSchemaRefused(t *testing.T) {
	ctx := context.Background()
	_, u := openNew(t, nil)
	if s, err := pgstore.Open(ctx, u, &pgstore.Options{Bodies: pgstore.BodiesElsewhere}); !errors.Is(err, pgstore.ErrSchema) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open of a postgres-bodies database as an index: %v, want ErrSchema", err)
	}
	pgtest.Exec(t, u, `UPDATE hybridctx_meta SET value = '99' WHERE key = 'schema_version'`)
	_, err := pgstore.Open(ctx, u, nil)
	if !errors.Is(err, pgstore.ErrSchema) || !strings.Contains(err.Error(), "99") {
		t.Fatalf("Open of a newer schema: %v, want ErrSchema naming version 99", err)
	}
	pgtest.Exec(t, u, `UPDATE hybridctx_meta SET value = 'x' WHERE key = 'schema_version'`)
	if _, err := pgstore.Open(ctx, u, nil); !errors.Is(err, pgstore.ErrSchema) {
		t.Fatalf("Open of an unreadable version: %v, want ErrSchema", err)
	}
	nowhere := pgtest.WithSchema(t, pgtest.ServerURL(t), "hx_no_such_schema")
	if _, err := pgstore.Open(ctx, nowhere, nil); !errors.Is(err, pgstore.ErrSchema) || !errors.Is(err, driver.ErrIncompatible) {
		t.Fatalf("Open with no schema to create in: %v, want ErrSchema", err)
	}
	if _, err := pgstore.Open(ctx, u, &pgstore.Options{Bodies: 7}); err == nil {
		t.Fatal("Open with an unknown body mode succeeded")
	}
}

// freePort returns a loopback port nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestOpenErrors checks that unreachable servers, wrong credentials, a
// missing database and malformed URLs give one clear error that names the
// backend and never contains the password.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	base, err := url.Parse(pgtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cr3t-marker-pw"
	with := func(f func(u *url.URL)) string {
		u := *base
		f(&u)
		return u.String()
	}
	cases := []struct {
		name, url string
		want      error
	}{
		{"wrong password", with(func(u *url.URL) { u.User = url.UserPassword(u.User.Username(), secret) }), driver.ErrUnavailable},
		{"unknown user", with(func(u *url.URL) { u.User = url.UserPassword("nobody_here", secret) }), driver.ErrUnavailable},
		{"missing database", with(func(u *url.URL) {
			pw, _ := base.User.Password()
			u.User = url.UserPassword(base.User.Username(), pw)
			u.Path = "/no_such_database"
		}), driver.ErrUnavailable},
		{"nothing listening", with(func(u *url.URL) {
			u.User = url.UserPassword("x", secret)
			u.Host = freePort(t)
		}), driver.ErrUnavailable},
		{"malformed URL", "postgres://user:" + secret + "@[::1", pgstore.ErrInvalidURL},
		{"malformed port", "postgres://user:" + secret + "@localhost:99999999/db", pgstore.ErrInvalidURL},
		{"key=value form", "host=127.0.0.1 port=1 password=" + secret + " connect_timeout=x", pgstore.ErrInvalidURL},
	}
	for _, c := range cases {
		s, err := pgstore.Open(ctx, c.url, nil)
		if err == nil {
			s.Close()
			t.Errorf("%s: Open succeeded", c.name)
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		msg := err.Error()
		realPW, _ := base.User.Password()
		if strings.Contains(msg, secret[:10]) || strings.Contains(msg, realPW) {
			t.Errorf("%s: the error shows a password: %s", c.name, msg)
		}
		if strings.Contains(msg, "\n") || !strings.Contains(strings.ToLower(msg), "postgres") {
			t.Errorf("%s: want one line naming PostgreSQL: %q", c.name, msg)
		}
		t.Logf("%s: %s", c.name, msg)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := pgstore.Open(cctx, base.String(), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with a cancelled context: %v", err)
	}
}

// TestIndexMode checks a database that keeps records only: no foreign key
// to bodies, and the Bodies methods refuse.
func TestIndexMode(t *testing.T) {
	s, u := openNew(t, &pgstore.Options{Bodies: pgstore.BodiesElsewhere})
	ctx := context.Background()
	if s.Mode() != pgstore.BodiesElsewhere || !strings.HasPrefix(s.String(), "postgres://") || strings.Contains(s.String(), "pw-") {
		t.Fatalf("Mode %v, String %q", s.Mode(), s.String())
	}
	key := artifact.RefOf([]byte("elsewhere")).Hex()
	_, err1 := s.NewWriter(ctx)
	_, err2 := s.Stat(ctx, key)
	_, err3 := s.Open(ctx, key)
	err4 := s.Delete(ctx, key)
	var err5 error
	for _, err := range s.List(ctx) {
		err5 = err
	}
	for i, err := range []error{err1, err2, err3, err4, err5} {
		if !errors.Is(err, pgstore.ErrNoBodies) {
			t.Errorf("Bodies call %d in index mode: %v, want ErrNoBodies", i, err)
		}
	}
	rec := record(artifact.RefOf([]byte("elsewhere")), 9)
	if created, err := s.CreateRecord(ctx, rec); err != nil || !created {
		t.Fatalf("CreateRecord without a local body = %v, %v", created, err)
	}
	if n := queryInt(t, u, `SELECT count(*) FROM pg_constraint WHERE conname = 'hybridctx_records_body'
		AND connamespace = current_schema()::regnamespace`); n != 0 {
		t.Fatalf("an index has %d foreign keys to bodies", n)
	}
}

// TestClosed checks that a closed Store refuses every call.
func TestClosed(t *testing.T) {
	s, _ := openNew(t, nil)
	ctx := context.Background()
	w, err := s.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	key := artifact.RefOf(nil).Hex()
	rec := record(artifact.RefOf(nil), 0)
	_, e1 := s.NewWriter(ctx)
	e2 := w.Commit(ctx, key, false)
	_, e3 := s.Stat(ctx, key)
	_, e4 := s.CreateRecord(ctx, rec)
	_, e5 := s.GetRecord(ctx, rec.Owner, rec.Ref)
	_, e6 := s.Lock(ctx, key)
	_, e7 := s.SweepUploads(ctx, 0)
	for i, err := range []error{e1, e2, e3, e4, e5, e6, e7} {
		if !errors.Is(err, pgstore.ErrClosed) {
			t.Errorf("call %d after Close: %v, want ErrClosed", i, err)
		}
	}
	if err := w.Abort(); err != nil {
		t.Errorf("Abort after Close: %v", err)
	}
}

// TestRecordTextSanitized stores metadata that PostgreSQL text cannot hold.
func TestRecordTextSanitized(t *testing.T) {
	s, _ := openNew(t, &pgstore.Options{Bodies: pgstore.BodiesElsewhere})
	ctx := context.Background()
	rec := record(artifact.RefOf([]byte("x")), 1)
	rec.Tool, rec.CallID, rec.Description = "a\x00b", "c\xffd", "ok ✓"
	if _, err := s.CreateRecord(ctx, rec); err != nil {
		t.Fatalf("CreateRecord: %v", err)
	}
	got, err := s.GetRecord(ctx, rec.Owner, rec.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tool != "a\uFFFDb" || got.CallID != "c\uFFFDd" || got.Description != "ok ✓" {
		t.Fatalf("stored %q, %q, %q", got.Tool, got.CallID, got.Description)
	}
}

// TestLockKeysChecked checks the Locker's argument handling; the conformance
// suite covers exclusion and deadlines.
func TestLockKeysChecked(t *testing.T) {
	s, _ := openNew(t, nil)
	if _, err := s.Lock(context.Background(), "../../etc"); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("Lock of a malformed key: %v, want fs.ErrInvalid", err)
	}
	// Two stores on one schema exclude each other (two "machines").
	u, _ := schemas.Load(s)
	s2, err := pgstore.Open(context.Background(), u.(string), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	key := artifact.RefOf([]byte("k")).Hex()
	unlock, err := s.Lock(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := s2.Lock(ctx, key); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock from a second store while held: %v", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	unlock2, err := s2.Lock(context.Background(), key)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	if err := unlock2(); err != nil || unlock2() != nil {
		t.Fatalf("unlock twice: %v", err)
	}
}

// TestDriverRoundTripSmallWrites writes and reads a streamed body in small
// pieces, across chunk boundaries.
func TestDriverRoundTripSmallWrites(t *testing.T) {
	s, _ := openNew(t, nil)
	ctx := context.Background()
	data := content(11, 2*mib+777)
	w, err := s.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 1000 {
		if _, err := w.Write(data[off:min(off+1000, len(data))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(ctx, artifact.RefOf(data).Hex(), false); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	r, err := s.Open(ctx, artifact.RefOf(data).Hex())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got bytes.Buffer
	small := make([]byte, 777)
	for {
		n, err := r.Read(small)
		got.Write(small[:n])
		if err != nil {
			break
		}
	}
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("read back %d bytes, not the %d written", got.Len(), len(data))
	}
	tail := make([]byte, 10)
	n, err := r.(driver.RangeReader).ReadAt(tail, int64(len(data)-4))
	if n != 4 || err == nil || !bytes.Equal(tail[:4], data[len(data)-4:]) {
		t.Fatalf("ReadAt past the end = %d, %v", n, err)
	}
}
