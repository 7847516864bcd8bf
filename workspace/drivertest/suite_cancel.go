package drivertest

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// firstErr ranges over seq until it yields an error.
func firstErr[V any](seq iter.Seq2[V, error]) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return errors.New("no error yielded")
}

// cancelled returns an already-cancelled context.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// cancelFixture stores one body and one record to check that cancelled
// calls change nothing.
type cancelFixture struct {
	data  []byte
	ref   artifact.Ref
	rec   artifact.Record
	fresh []byte // never stored
	info  driver.Info
}

func (e *env) cancelFixture() cancelFixture {
	e.t.Helper()
	f := cancelFixture{data: content(400, 5000), fresh: content(401, 5000)}
	f.rec = e.record(ownerA, f.data, t0)
	f.ref = f.rec.Ref
	e.create(f.rec)
	info, err := e.s.StatBody(e.ctx, f.ref)
	if err != nil {
		e.t.Fatalf("StatBody: %v", err)
	}
	f.info = info
	return f
}

// checkUnchanged verifies the fixture is exactly as it was.
func (e *env) checkUnchanged(f cancelFixture) {
	e.t.Helper()
	e.wantKeys(f.ref)
	e.mustRead(f.ref, f.data)
	if info, err := e.s.StatBody(e.ctx, f.ref); err != nil || info.Version != f.info.Version {
		e.t.Fatalf("body version %q (err %v) after cancelled calls, want %q", info.Version, err, f.info.Version)
	}
	e.wantRecord(ownerA, f.ref, f.rec)
	e.wantList("all records", driver.Query{}, f.rec)
	e.mustBeAbsent(artifact.RefOf(f.fresh))
}

func testCancelledStore(e *env) {
	f := e.cancelFixture()
	c := cancelled()
	s := e.s
	var buf bytes.Buffer
	calls := []struct {
		name string
		call func() error
	}{
		{"Put", func() error { _, _, _, err := Put(c, s, bytes.NewReader(f.fresh), nil); return err }},
		{"Put existing", func() error { _, _, _, err := Put(c, s, bytes.NewReader(f.data), nil); return err }},
		{"Ingest", func() error { _, _, err := s.Ingest(c, bytes.NewReader(f.fresh), nil); return err }},
		{"Pending.Commit", func() error {
			p, _, err := s.Ingest(e.ctx, bytes.NewReader(f.fresh), nil)
			if err != nil {
				e.t.Fatalf("Ingest: %v", err)
			}
			defer p.Discard()
			_, err = p.Commit(c)
			return err
		}},
		{"VerifyBody", func() error { return s.VerifyBody(c, f.ref, int64(len(f.data))) }},
		{"ReadVerified", func() error {
			b, err := s.ReadVerified(c, f.ref, int64(len(f.data)), 0, 10)
			if b != nil {
				e.t.Errorf("ReadVerified with a cancelled context returned %d bytes", len(b))
			}
			return err
		}},
		{"CopyVerified", func() error {
			_, err := s.CopyVerified(c, f.ref, int64(len(f.data)), 0, 10, &buf)
			return err
		}},
		{"StatBody", func() error { _, err := s.StatBody(c, f.ref); return err }},
		{"DeleteBody", func() error { return s.DeleteBody(c, f.ref) }},
		{"ListBodies", func() error { return firstErr(s.ListBodies(c)) }},
		{"CreateRecord", func() error {
			r := f.rec
			r.Owner = ownerB
			_, err := s.CreateRecord(c, r)
			return err
		}},
		{"GetRecord", func() error { _, err := s.GetRecord(c, ownerA, f.ref); return err }},
		{"TouchRecord", func() error { return s.TouchRecord(c, ownerA, f.ref, t0.Add(time.Hour)) }},
		{"DeleteRecord", func() error { return s.DeleteRecord(c, ownerA, f.ref) }},
		{"ListRecords", func() error { return firstErr(s.ListRecords(c, driver.Query{})) }},
	}
	for _, call := range calls {
		wantErr(e.t, call.name+" with a cancelled context", call.call(), context.Canceled)
	}
	if buf.Len() != 0 {
		e.t.Errorf("CopyVerified with a cancelled context wrote %d bytes", buf.Len())
	}
	e.checkUnchanged(f)
}

func testCancelledDriver(e *env) {
	f := e.cancelFixture()
	c := cancelled()
	key := f.ref.Hex()
	b, r := e.b, e.r

	if w, err := b.NewWriter(c); !errors.Is(err, context.Canceled) {
		if err == nil {
			_ = w.Abort()
		}
		e.t.Errorf("NewWriter with a cancelled context: %v, want context.Canceled", err)
	}
	for _, tc := range []struct {
		data    []byte
		replace bool
	}{{f.fresh, false}, {f.data, true}} {
		w, err := b.NewWriter(e.ctx)
		if err != nil {
			e.t.Fatalf("NewWriter: %v", err)
		}
		if _, err := w.Write(tc.data); err != nil {
			e.t.Fatalf("Write: %v", err)
		}
		err = w.Commit(c, artifact.RefOf(tc.data).Hex(), tc.replace)
		wantErr(e.t, "Commit with a cancelled context", err, context.Canceled)
		if err := w.Abort(); err != nil {
			e.t.Errorf("Abort after a cancelled Commit: %v", err)
		}
	}
	if rd, err := b.Open(c, key); !errors.Is(err, context.Canceled) {
		if err == nil {
			rd.Close()
		}
		e.t.Errorf("Open with a cancelled context: %v, want context.Canceled", err)
	}
	_, err := b.Stat(c, key)
	wantErr(e.t, "Stat with a cancelled context", err, context.Canceled)
	wantErr(e.t, "Delete with a cancelled context", b.Delete(c, key), context.Canceled)
	wantErr(e.t, "List with a cancelled context", firstErr(b.List(c)), context.Canceled)
	if l, ok := b.(driver.Locker); ok {
		if unlock, err := l.Lock(c, key); !errors.Is(err, context.Canceled) {
			if err == nil {
				_ = unlock()
			}
			e.t.Errorf("Lock with a cancelled context: %v, want context.Canceled", err)
		}
	}

	other := f.rec
	other.Owner = ownerB
	_, err = r.CreateRecord(c, other)
	wantErr(e.t, "CreateRecord with a cancelled context", err, context.Canceled)
	_, err = r.GetRecord(c, ownerA, f.ref)
	wantErr(e.t, "GetRecord with a cancelled context", err, context.Canceled)
	wantErr(e.t, "TouchRecord with a cancelled context", r.TouchRecord(c, ownerA, f.ref, t0.Add(time.Hour)), context.Canceled)
	wantErr(e.t, "DeleteRecord with a cancelled context", r.DeleteRecord(c, ownerA, f.ref), context.Canceled)
	wantErr(e.t, "ListRecords with a cancelled context", firstErr(r.ListRecords(c, driver.Query{})), context.Canceled)

	e.checkUnchanged(f)
	if _, err := r.GetRecord(e.ctx, ownerB, f.ref); !errors.Is(err, driver.ErrNotFound) {
		e.t.Fatalf("a cancelled CreateRecord left a record (%v)", err)
	}
}
