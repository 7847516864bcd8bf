package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
	"github.com/hybridctx/hybridctx/workspace/pgstore/pgtest"
)

const mib = 1 << 20

// content returns n deterministic pseudo-random bytes.
func content(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// queryInt runs a one-number query on the schema of u.
func queryInt(t *testing.T, u, sql string, args ...any) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func uploads(t *testing.T, u string) int64 {
	return queryInt(t, u, `SELECT count(*) FROM hybridctx_uploads`)
}

// TestLargeBodiesStream stores, dedups, reads and repairs bodies that go
// through the large-object path (over the 1 MiB in-memory chunk), and checks
// that no upload is left behind.
func TestLargeBodiesStream(t *testing.T) {
	s, u := openNew(t, nil)
	ctx := context.Background()
	st := workspace.New(s, s)
	data := content(1, 3*mib+12345)
	size := int64(len(data))
	ref, n, res, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil)
	if err != nil || res != workspace.Created || n != size || ref != artifact.RefOf(data) {
		t.Fatalf("Put = %v, %d, %v, %v", ref, n, res, err)
	}
	if _, _, res, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil); err != nil || res != workspace.Existing {
		t.Fatalf("second Put = %v, %v; want existing", res, err)
	}
	// Exactly one chunk is also kept in memory, not in a large object.
	exact := content(2, mib)
	if _, _, res, err := drivertest.Put(ctx, st, bytes.NewReader(exact), nil); err != nil || res != workspace.Created {
		t.Fatalf("Put of exactly one chunk = %v, %v", res, err)
	}
	if n := uploads(t, u); n != 0 {
		t.Fatalf("%d uploads left after commits", n)
	}
	for _, c := range [][2]int64{{0, size}, {mib - 1, 2}, {2*mib - 10, 100}, {size - 1, 1}, {mib, mib}, {size, 0}} {
		got, err := st.ReadVerified(ctx, ref, size, c[0], c[1])
		if err != nil || !bytes.Equal(got, data[c[0]:c[0]+c[1]]) {
			t.Fatalf("ReadVerified(%d, %d) = %d bytes, %v", c[0], c[1], len(got), err)
		}
		var buf bytes.Buffer
		if m, err := st.CopyVerified(ctx, ref, size, c[0], c[1], &buf); err != nil || m != c[1] || !bytes.Equal(buf.Bytes(), data[c[0]:c[0]+c[1]]) {
			t.Fatalf("CopyVerified(%d, %d) = %d, %v", c[0], c[1], m, err)
		}
	}
	bad := bytes.Clone(data)
	bad[2*mib+5] ^= 0x40
	pgtest.Tamper(t, u, ref.Hex(), bad)
	if err := st.VerifyBody(ctx, ref, size); !errors.Is(err, workspace.ErrCorrupt) {
		t.Fatalf("VerifyBody of a tampered body: %v", err)
	}
	if _, _, res, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil); err != nil || res != workspace.Replaced {
		t.Fatalf("Put over a tampered body = %v, %v; want replaced", res, err)
	}
	if err := st.VerifyBody(ctx, ref, size); err != nil {
		t.Fatalf("VerifyBody after repair: %v", err)
	}
	if n := uploads(t, u); n != 0 {
		t.Fatalf("%d uploads left after the repair", n)
	}
}

// TestWriterAbortRemovesUpload checks that Abort removes the large object of
// a body that had started streaming.
func TestWriterAbortRemovesUpload(t *testing.T) {
	s, u := openNew(t, nil)
	ctx := context.Background()
	w, err := s.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(content(3, 2*mib+1)); err != nil {
		t.Fatal(err)
	}
	loid := queryInt(t, u, `SELECT loid::bigint FROM hybridctx_uploads`)
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if n := uploads(t, u); n != 0 {
		t.Fatalf("%d uploads after Abort", n)
	}
	if n := queryInt(t, u, `SELECT count(*) FROM pg_largeobject_metadata WHERE oid = $1::oid`, loid); n != 0 {
		t.Fatalf("the large object survived Abort")
	}
	if err := w.Commit(ctx, artifact.RefOf(nil).Hex(), false); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("Write after Abort succeeded")
	}
}

// TestTooLarge checks the configured size limit: the write fails with
// workspace.ErrTooLarge and nothing is left.
func TestTooLarge(t *testing.T) {
	s, u := openNew(t, &pgstore.Options{MaxBodyBytes: mib + 10})
	ctx := context.Background()
	st := workspace.New(s, s)
	ok := content(4, mib+10)
	if _, _, res, err := drivertest.Put(ctx, st, bytes.NewReader(ok), nil); err != nil || res != workspace.Created {
		t.Fatalf("Put at the limit = %v, %v", res, err)
	}
	_, _, _, err := drivertest.Put(ctx, st, bytes.NewReader(content(5, 2*mib)), nil)
	if !errors.Is(err, workspace.ErrTooLarge) {
		t.Fatalf("Put over the limit: %v, want ErrTooLarge", err)
	}
	if n := uploads(t, u); n != 0 {
		t.Fatalf("%d uploads left after a refused body", n)
	}
	if n := queryInt(t, u, `SELECT count(*) FROM hybridctx_bodies`); n != 1 {
		t.Fatalf("%d bodies, want 1", n)
	}
	for _, max := range []int64{-1, pgstore.MaxBodyLimit + 1} {
		if s, err := pgstore.Open(ctx, u, &pgstore.Options{MaxBodyBytes: max}); err == nil {
			s.Close()
			t.Errorf("Open with MaxBodyBytes %d succeeded", max)
		}
	}
}

// TestCommitUnderWrongKeyRefused checks that the CHECK constraint refuses
// bytes committed under another digest, in memory and streamed.
func TestCommitUnderWrongKeyRefused(t *testing.T) {
	s, u := openNew(t, nil)
	ctx := context.Background()
	for _, size := range []int{3, mib + 3} {
		data := content(6, size)
		w, err := s.NewWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		wrong := artifact.RefOf(append(data, 0)).Hex()
		if err := w.Commit(ctx, wrong, false); !errors.Is(err, pgstore.ErrRefused) {
			t.Fatalf("Commit of %d bytes under a wrong key: %v, want ErrRefused", size, err)
		}
		if err := w.Commit(ctx, wrong, true); !errors.Is(err, pgstore.ErrRefused) {
			t.Fatalf("Commit(replace) of %d bytes under a wrong key: %v, want ErrRefused", size, err)
		}
		if err := w.Commit(ctx, "../x", false); !errors.Is(err, fs.ErrInvalid) {
			t.Fatalf("Commit under a malformed key: %v, want fs.ErrInvalid", err)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
	}
	if n := queryInt(t, u, `SELECT count(*) FROM hybridctx_bodies`); n != 0 {
		t.Fatalf("%d bodies stored under wrong keys", n)
	}
	if n := uploads(t, u); n != 0 {
		t.Fatalf("%d uploads left", n)
	}
}

// TestConstraintRefusesRowChanges alters rows directly in PostgreSQL: the
// database refuses every change that breaks digest, size or body agreement.
func TestConstraintRefusesRowChanges(t *testing.T) {
	s, u := openNew(t, nil)
	ctx := context.Background()
	st := workspace.New(s, s)
	data := content(7, 5000)
	ref, _, _, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := ref.Sum()
	for _, c := range []struct {
		name, sql string
		args      []any
		code      string
	}{
		{"body bytes", `UPDATE hybridctx_bodies SET body = $1`, []any{[]byte("not the body")}, "23514"},
		{"one flipped byte", `UPDATE hybridctx_bodies SET body = overlay(body placing '\x000102'::bytea from 10)`, nil, "23514"},
		{"size", `UPDATE hybridctx_bodies SET size = size + 1`, nil, "23514"},
		{"digest", `UPDATE hybridctx_bodies SET digest = sha256('x')`, nil, "23514"},
		{"insert under a wrong digest", `INSERT INTO hybridctx_bodies (digest, size, body) VALUES (sha256('x'), 1, 'y')`, nil, "23514"},
		{"short digest", `INSERT INTO hybridctx_bodies (digest, size, body) VALUES ('\x01', 0, '')`, nil, "23514"},
		{"delete with records", `DELETE FROM hybridctx_bodies`, nil, "23503"},
	} {
		if c.name == "delete with records" {
			if _, err := st.CreateRecord(ctx, record(ref, len(data))); err != nil {
				t.Fatal(err)
			}
		}
		err := pgtest.TryExec(u, c.sql, c.args...)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.code)) {
			t.Errorf("%s: %v, want SQLSTATE %s", c.name, err, c.code)
		}
	}
	got, err := st.ReadVerified(ctx, ref, int64(len(data)), 0, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the body changed: %v", err)
	}
	if queryInt(t, u, `SELECT count(*) FROM hybridctx_bodies WHERE digest = $1`, sum[:]) != 1 {
		t.Fatal("the body row is gone")
	}
}

func record(ref artifact.Ref, size int) artifact.Record {
	return artifact.Record{
		Owner: artifact.Owner{User: "u", Workflow: "w", Session: "s"}, Ref: ref, Size: int64(size),
		Kind: "binary", Tool: "t", CallID: "c", CreatedAt: t0, LastUsedAt: t0,
	}
}

// TestBodyInUse checks the foreign key: a body with records cannot be
// deleted, and a record needs its body.
func TestBodyInUse(t *testing.T) {
	s, _ := openNew(t, nil)
	ctx := context.Background()
	st := workspace.New(s, s)
	data := []byte("referenced body")
	ref, _, _, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := record(ref, len(data))
	if _, err := st.CreateRecord(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteBody(ctx, ref); !errors.Is(err, pgstore.ErrBodyInUse) {
		t.Fatalf("DeleteBody with a record: %v, want ErrBodyInUse", err)
	}
	if err := st.VerifyBody(ctx, ref, int64(len(data))); err != nil {
		t.Fatalf("the body is damaged after a refused delete: %v", err)
	}
	if err := st.DeleteRecord(ctx, rec.Owner, ref); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteBody(ctx, ref); err != nil {
		t.Fatalf("DeleteBody without records: %v", err)
	}
	created, err := st.CreateRecord(ctx, rec)
	if created || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CreateRecord for an absent body = %v, %v; want fs.ErrNotExist", created, err)
	}
	if _, err := st.GetRecord(ctx, rec.Owner, ref); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused record exists: %v", err)
	}
}

// TestSweepUploads plays a writer that died after streaming part of a body.
func TestSweepUploads(t *testing.T) {
	s, u := openNew(t, nil)
	ctx := context.Background()
	w, err := s.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(content(8, 2*mib+5)); err != nil {
		t.Fatal(err)
	}
	loid := queryInt(t, u, `SELECT loid::bigint FROM hybridctx_uploads`)
	if n, err := s.SweepUploads(ctx, pgstore.DefaultUploadMaxAge); err != nil || n != 0 {
		t.Fatalf("SweepUploads(24h) = %d, %v; want 0", n, err)
	}
	if n, err := s.SweepUploads(ctx, 0); err != nil || n != 1 {
		t.Fatalf("SweepUploads(0) = %d, %v; want 1", n, err)
	}
	if uploads(t, u) != 0 || queryInt(t, u, `SELECT count(*) FROM pg_largeobject_metadata WHERE oid = $1::oid`, loid) != 0 {
		t.Fatal("the upload survived the sweep")
	}
	// The swept writer cannot commit a partial body.
	if err := w.Commit(ctx, artifact.RefOf([]byte("x")).Hex(), false); err == nil {
		t.Fatal("Commit of a swept upload succeeded")
	}
	_ = w.Abort()
	if n := queryInt(t, u, `SELECT count(*) FROM hybridctx_bodies`); n != 0 {
		t.Fatalf("%d bodies after a swept upload", n)
	}
}

// TestReaderSeesReplace checks that a reader of a body that is replaced
// under it fails with workspace.ErrChanged instead of mixing versions.
func TestReaderSeesReplace(t *testing.T) {
	s, u := openNew(t, nil)
	ctx := context.Background()
	st := workspace.New(s, s)
	data := content(9, 3*mib)
	ref, _, _, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Tamper(t, u, ref.Hex(), bytes.Repeat([]byte{1}, len(data)))
	r, err := s.Open(ctx, ref.Hex())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 1000)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	if _, _, res, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil); err != nil || res != workspace.Replaced {
		t.Fatalf("repair = %v, %v", res, err)
	}
	if _, err := io.ReadAll(r); !errors.Is(err, workspace.ErrChanged) {
		t.Fatalf("reading on after a replace: %v, want ErrChanged", err)
	}
	if _, err := r.(driver.RangeReader).ReadAt(buf, 0); !errors.Is(err, workspace.ErrChanged) {
		t.Fatalf("ReadAt after a replace: %v, want ErrChanged", err)
	}
	info, err := r.(driver.Restatter).Restat()
	if err != nil || info.Version == r.Info().Version {
		t.Fatalf("Restat = %+v, %v; want a new version", info, err)
	}
	// A reader whose context ends stops at its next fetch.
	cctx, cancel := context.WithCancel(ctx)
	r2, err := s.Open(cctx, ref.Hex())
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, err := io.ReadFull(r2, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(r2); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v, want context.Canceled", err)
	}
}

// TestListPaging lists more bodies and records than one page holds.
func TestListPaging(t *testing.T) {
	defer pgstore.SetListPage(3)()
	s, _ := openNew(t, nil)
	ctx := context.Background()
	st := workspace.New(s, s)
	owners := []artifact.Owner{{User: "a", Workflow: "w", Session: "s"}, {User: "b", Workflow: "w", Session: "s"}}
	want := map[artifact.Ref]bool{}
	for i := range 8 {
		data := []byte{byte(i)}
		ref, _, _, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil)
		if err != nil {
			t.Fatal(err)
		}
		want[ref] = true
		for _, o := range owners {
			rec := record(ref, 1)
			rec.Owner = o
			rec.LastUsedAt = t0.Add(time.Duration(i%2) * time.Hour) // many ties
			if _, err := st.CreateRecord(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := map[string]bool{}
	for info, err := range st.ListBodies(ctx) {
		if err != nil || seen[info.Key] {
			t.Fatalf("ListBodies: %v (repeat %v)", err, seen[info.Key])
		}
		seen[info.Key] = true
	}
	if len(seen) != len(want) {
		t.Fatalf("ListBodies: %d bodies, want %d", len(seen), len(want))
	}
	var got []artifact.Record
	for rec, err := range st.ListRecords(ctx, driver.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec)
	}
	if len(got) != 16 {
		t.Fatalf("ListRecords: %d records, want 16", len(got))
	}
	type pair struct {
		ref  artifact.Ref
		user string
	}
	pairs := map[pair]bool{}
	for i, rec := range got {
		p := pair{rec.Ref, rec.Owner.User}
		if pairs[p] {
			t.Fatalf("ListRecords repeated a record at %d", i)
		}
		pairs[p] = true
		if i > 0 && rec.LastUsedAt.Before(got[i-1].LastUsedAt) {
			t.Fatalf("ListRecords out of order at %d", i)
		}
	}
	a := owners[0]
	n := 0
	for _, err := range st.ListRecords(ctx, driver.Query{Owner: &a, UnusedSince: t0.Add(time.Minute)}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 4 {
		t.Fatalf("filtered ListRecords: %d, want 4", n)
	}
}
