package drivertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// capBodies serves readers whose capabilities depend on the key:
// "plain", "range", "restat" or "both".
type capBodies struct{ driver.Bodies }

type plainReader struct{ *strings.Reader }

func (plainReader) Close() error      { return nil }
func (plainReader) Info() driver.Info { return driver.Info{Key: "k", Size: 10, Version: "v1"} }

type rangeOnly struct {
	plainReader
	io.ReaderAt
}
type restatOnly struct{ plainReader }

func (restatOnly) Restat() (driver.Info, error) { return driver.Info{Version: "v2"}, nil }

type both struct {
	restatOnly
	io.ReaderAt
}

func (capBodies) Open(_ context.Context, key string) (driver.Reader, error) {
	p := plainReader{strings.NewReader("0123456789")}
	ra := strings.NewReader("0123456789")
	switch key {
	case "plain":
		// strings.Reader has ReadAt, which must not leak through.
		return struct {
			io.Reader
			io.Closer
			infoer
		}{p, p, p}, nil
	case "range":
		return rangeOnly{p, ra}, nil
	case "restat":
		return struct {
			io.Reader
			io.Closer
			infoer
			driver.Restatter
		}{p, p, p, restatOnly{p}}, nil
	case "both":
		return both{restatOnly{p}, ra}, nil
	}
	return nil, fs.ErrNotExist
}

type infoer interface{ Info() driver.Info }

func TestInstrumentedKeepsReaderCapabilities(t *testing.T) {
	m := memstore.New()
	in := Instrument(capBodies{m}, m, nil)
	for _, key := range []string{"plain", "range", "restat", "both"} {
		raw, _ := capBodies{}.Open(context.Background(), key)
		in.Reset()
		r, err := in.Open(context.Background(), key)
		if err != nil {
			t.Fatalf("Open(%s): %v", key, err)
		}
		_, rawRange := raw.(driver.RangeReader)
		_, rawRestat := raw.(driver.Restatter)
		ra, gotRange := r.(driver.RangeReader)
		rs, gotRestat := r.(driver.Restatter)
		if gotRange != rawRange || gotRestat != rawRestat {
			t.Errorf("%s: wrapper has range %v restat %v, wrapped has %v %v", key, gotRange, gotRestat, rawRange, rawRestat)
		}
		if want := (key == "range" || key == "both"); rawRange != want {
			t.Fatalf("%s: fixture has range %v", key, rawRange)
		}
		if r.Info().Version != "v1" {
			t.Errorf("%s: Info not delegated: %+v", key, r.Info())
		}
		if c := in.Counts(); c.Opens != 1 || c.BytesRead != 0 {
			t.Errorf("%s: after one Open: %+v", key, c)
		}
		buf := make([]byte, 4)
		if n, err := io.ReadFull(r, buf); n != 4 || err != nil || string(buf) != "0123" {
			t.Fatalf("%s: Read = %q, %v", key, buf[:n], err)
		}
		if gotRange {
			if n, err := ra.ReadAt(buf[:3], 7); n != 3 || err != nil || string(buf[:3]) != "789" {
				t.Fatalf("%s: ReadAt = %q, %v", key, buf[:n], err)
			}
		}
		want := int64(4)
		if gotRange {
			want += 3
		}
		if got := in.Counts().BytesRead; got != want {
			t.Errorf("%s: BytesRead = %d, want %d", key, got, want)
		}
		if gotRestat {
			if info, err := rs.Restat(); err != nil || info.Version != "v2" {
				t.Errorf("%s: Restat not delegated: %+v, %v", key, info, err)
			}
		}
		if err := r.Close(); err != nil {
			t.Errorf("%s: Close: %v", key, err)
		}
	}
}

func TestInstrumentedCounts(t *testing.T) {
	ctx := context.Background()
	m := memstore.New()
	in := Instrument(m, m, nil)
	s := workspace.New(in, in)
	data := bytes.Repeat([]byte("x"), 1000)
	ref := putOn(t, s, data)
	want := Counts{NewWriters: 1, Writes: 1, Commits: 1, BytesWritten: 1000}
	if c := in.Counts(); c != want {
		t.Fatalf("after a created Put: %+v, want %+v", c, want)
	}
	if got := in.BodyCalls(); got != 2 {
		t.Fatalf("BodyCalls = %d, want 2", got)
	}
	// A dedup hit: a second writer, a refused commit, a verification
	// (stat, open, read, hashed), an abort.
	putOn(t, s, data)
	want = Counts{NewWriters: 2, Writes: 2, Commits: 1, Aborts: 1, Opens: 1, Stats: 1, BytesWritten: 2000, BytesRead: 1000}
	if c := in.Counts(); c != want {
		t.Fatalf("after an existing Put: %+v, want %+v", c, want)
	}
	in.Reset()
	if c := in.Counts(); c != (Counts{}) || in.BodyCalls() != 0 {
		t.Fatalf("after Reset: %+v", c)
	}
	if _, err := s.ReadVerified(ctx, ref, 1000, 10, 10); err != nil {
		t.Fatal(err)
	}
	for range s.ListBodies(ctx) {
	}
	if err := s.DeleteBody(ctx, ref); err != nil {
		t.Fatal(err)
	}
	rec := artifact.Record{Owner: ownerA, Ref: ref, Size: 1000, CreatedAt: t0, LastUsedAt: t0}
	for range 2 {
		if _, err := s.CreateRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GetRecord(ctx, ownerA, ref); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchRecord(ctx, ownerA, ref, t0); err != nil {
		t.Fatal(err)
	}
	for range s.ListRecords(ctx, driver.Query{}) {
	}
	if err := s.DeleteRecord(ctx, ownerA, ref); err != nil {
		t.Fatal(err)
	}
	want = Counts{Opens: 1, BytesRead: 1000, Lists: 1, Deletes: 1, CreateRecords: 2, RecordsCreated: 1,
		GetRecords: 1, TouchRecords: 1, ListRecords: 1, DeleteRecords: 1}
	if c := in.Counts(); c != want {
		t.Fatalf("after reads and records: %+v, want %+v", c, want)
	}
	if got := in.BodyCalls(); got != 3 {
		t.Fatalf("BodyCalls = %d, want 3", got)
	}
	// A replace commit counts as a replace.
	in.Reset()
	w, _ := in.NewWriter(ctx)
	w.Write(data)
	if err := w.Commit(ctx, ref.Hex(), true); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if c := in.Counts(); c.Replaces != 1 || c.Commits != 0 || c.Aborts != 0 {
		t.Fatalf("after a replace commit: %+v", c)
	}
}

func TestInstrumentedHooks(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("injected")
	m := memstore.New()
	h := &Hooks{}
	in := Instrument(m, m, h) // hooks are set after Instrument, before use
	s := workspace.New(in, in)
	data := []byte("hooked body")
	key := artifact.RefOf(data).Hex()

	h.NewWriter = func(context.Context) error { return boom }
	if _, _, _, err := Put(ctx, s, bytes.NewReader(data), nil); !errors.Is(err, boom) {
		t.Fatalf("Put with a failing NewWriter: %v", err)
	}
	h.NewWriter = nil
	h.Write = func([]byte) error { return boom }
	if _, _, _, err := Put(ctx, s, bytes.NewReader(data), nil); !errors.Is(err, boom) {
		t.Fatalf("Put with a failing Write: %v", err)
	}
	if c := in.Counts(); c.Aborts != 1 || c.BytesWritten != 0 || c.Commits != 0 {
		t.Fatalf("after a failing Write: %+v", c)
	}
	h.Write = nil
	var committed []string
	h.Commit = func(_ context.Context, k string, replace bool) error {
		if k != key || replace {
			t.Errorf("Commit hook saw %s, %v", k, replace)
		}
		return boom
	}
	if _, _, _, err := Put(ctx, s, bytes.NewReader(data), nil); !errors.Is(err, boom) {
		t.Fatalf("Put with a failing Commit: %v", err)
	}
	if _, err := m.Stat(ctx, key); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed commit left a body: %v", err)
	}
	h.Commit = nil
	h.AfterCommit = func(_ context.Context, k string, replace bool) { committed = append(committed, k) }
	ref := putOn(t, s, data)
	if len(committed) != 1 || committed[0] != key {
		t.Fatalf("AfterCommit saw %v", committed)
	}
	h.Open = func(_ context.Context, k string) error { return boom }
	if _, err := s.ReadVerified(ctx, ref, int64(len(data)), 0, 1); !errors.Is(err, boom) {
		t.Fatalf("ReadVerified with a failing Open: %v", err)
	}
	h.Stat = func(_ context.Context, k string) error { return boom }
	if _, err := s.StatBody(ctx, ref); !errors.Is(err, boom) {
		t.Fatalf("StatBody with a failing Stat: %v", err)
	}
	h.Delete = func(_ context.Context, k string) error { return boom }
	if err := s.DeleteBody(ctx, ref); !errors.Is(err, boom) {
		t.Fatalf("DeleteBody with a failing Delete: %v", err)
	}
	if _, err := m.Stat(ctx, key); err != nil {
		t.Fatalf("a failed Delete removed the body: %v", err)
	}
	rec := artifact.Record{Owner: ownerA, Ref: ref, CreatedAt: t0, LastUsedAt: t0}
	h.CreateRecord = func(context.Context, artifact.Record) error { return boom }
	if _, err := s.CreateRecord(ctx, rec); !errors.Is(err, boom) {
		t.Fatalf("CreateRecord hook: %v", err)
	}
	h.CreateRecord = nil
	if _, err := s.CreateRecord(ctx, rec); err != nil {
		t.Fatal(err)
	}
	h.GetRecord = func(context.Context, artifact.Owner, artifact.Ref) error { return boom }
	if _, err := s.GetRecord(ctx, ownerA, ref); !errors.Is(err, boom) {
		t.Fatalf("GetRecord hook: %v", err)
	}
	h.TouchRecord = func(context.Context, artifact.Owner, artifact.Ref) error { return boom }
	if err := s.TouchRecord(ctx, ownerA, ref, t0.Add(time.Hour)); !errors.Is(err, boom) {
		t.Fatalf("TouchRecord hook: %v", err)
	}
	if got, _ := m.GetRecord(ctx, ownerA, ref); !got.LastUsedAt.Equal(t0) {
		t.Fatalf("a failed touch changed the record")
	}
}

// hidden exposes only driver.Bodies: no Locker.
type hidden struct{ driver.Bodies }

func TestInstrumentedLockAndTamper(t *testing.T) {
	ctx := context.Background()
	m := memstore.New()
	key := artifact.RefOf([]byte("k")).Hex()
	for _, tc := range []struct {
		name string
		in   *Instrumented
		// other takes the same lock by another route, when there is one.
		other driver.Locker
	}{
		{"delegated", Instrument(m, m, nil), m},
		{"in-process", Instrument(hidden{m}, m, nil), nil},
	} {
		unlock, err := tc.in.Lock(ctx, key)
		if err != nil {
			t.Fatalf("%s: Lock: %v", tc.name, err)
		}
		lockers := []driver.Locker{tc.in}
		if tc.other != nil {
			lockers = append(lockers, tc.other)
		}
		for _, l := range lockers {
			tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			if u, err := l.Lock(tctx, key); !errors.Is(err, context.DeadlineExceeded) {
				if err == nil {
					u()
				}
				t.Errorf("%s: a held lock was taken again (%v)", tc.name, err)
			}
			cancel()
		}
		if err := unlock(); err != nil {
			t.Fatal(err)
		}
		u, err := tc.in.Lock(ctx, key)
		if err != nil {
			t.Fatalf("%s: Lock after unlock: %v", tc.name, err)
		}
		u()
	}
	data := []byte("tampered")
	s := workspace.New(m, m)
	ref := putOn(t, s, data)
	in := Instrument(Instrument(hidden{m}, m, nil), m, nil)
	if !in.Tamper(ref.Hex(), []byte("x")) {
		t.Fatal("Tamper through two wrappers failed")
	}
	if err := s.VerifyBody(ctx, ref, -1); !errors.Is(err, workspace.ErrCorrupt) {
		t.Fatalf("Tamper through the wrappers did not reach the body: %v", err)
	}
	if c := in.Counts(); c != (Counts{}) {
		t.Fatalf("Tamper was counted: %+v", c)
	}
	if in.Tamper(artifact.RefOf([]byte("absent")).Hex(), data) {
		t.Fatal("Tamper of an absent body succeeded")
	}
}

// TestInstrumentedConformance runs the suite through the wrapper: it must be
// transparent. The hidden variant has no Locker, so the suite uses the
// wrapper's in-process lock, and tampers through the harness's Tamper.
func TestInstrumentedConformance(t *testing.T) {
	t.Run("memstore", func(t *testing.T) {
		Run(t, func(t *testing.T) (driver.Bodies, driver.Records) {
			m := memstore.New()
			in := Instrument(m, m, nil)
			return in, in
		})
	})
	t.Run("hidden", func(t *testing.T) {
		RunWith(t, Harness{
			Open: func(t *testing.T) (driver.Bodies, driver.Records) {
				m := memstore.New()
				return hidden{m}, m
			},
			Tamper: func(t *testing.T, b driver.Bodies, key string, data []byte) {
				if !Overwrite(b.(hidden).Bodies, key, data) {
					t.Fatalf("no body %s", key)
				}
			},
		})
	})
}
