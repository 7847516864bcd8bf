package drivertest

import (
	"context"
	"iter"
	"sync/atomic"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/internal/keylock"
)

// Hooks inject faults into an Instrumented backend. Each hook runs before the
// call it names is delegated; a non-nil error fails that call without
// delegating it. Nil hooks are skipped.
type Hooks struct {
	// NewWriter runs before Bodies.NewWriter.
	NewWriter func(ctx context.Context) error
	// Write runs before each Writer.Write.
	Write func(p []byte) error
	// Commit runs before Writer.Commit; an error fails the commit and
	// leaves the writer open.
	Commit func(ctx context.Context, key string, replace bool) error
	// AfterCommit runs after a successful Writer.Commit (for example to
	// cancel a context at that exact point).
	AfterCommit func(ctx context.Context, key string, replace bool)
	// Open runs before Bodies.Open.
	Open func(ctx context.Context, key string) error
	// Stat runs before Bodies.Stat.
	Stat func(ctx context.Context, key string) error
	// Delete runs before Bodies.Delete.
	Delete func(ctx context.Context, key string) error
	// CreateRecord runs before Records.CreateRecord.
	CreateRecord func(ctx context.Context, rec artifact.Record) error
	// GetRecord runs before Records.GetRecord.
	GetRecord func(ctx context.Context, owner artifact.Owner, ref artifact.Ref) error
	// TouchRecord runs before Records.TouchRecord.
	TouchRecord func(ctx context.Context, owner artifact.Owner, ref artifact.Ref) error
}

// Counts is a snapshot of the calls an Instrumented backend has seen. Call
// counts include calls that failed, unless stated otherwise.
type Counts struct {
	// NewWriters counts Bodies.NewWriter calls; Writes counts Writer.Write
	// calls.
	NewWriters, Writes int64
	// Commits counts successful create-only commits (replace false);
	// Replaces counts successful replace commits.
	Commits, Replaces int64
	// Aborts counts writers ended by Abort before any successful commit
	// (once per writer).
	Aborts int64
	// Opens, Stats, Lists and Deletes count the Bodies calls of those names.
	Opens, Stats, Lists, Deletes int64
	// BytesWritten counts bytes accepted by writers; BytesRead counts bytes
	// returned by readers, through Read and ReadAt.
	BytesWritten, BytesRead int64
	// CreateRecords counts CreateRecord calls; RecordsCreated counts those
	// that reported created.
	CreateRecords, RecordsCreated int64
	// GetRecords, TouchRecords, DeleteRecords and ListRecords count the
	// Records calls of those names.
	GetRecords, TouchRecords, DeleteRecords, ListRecords int64
}

type counters struct {
	newWriters, writes, commits, replaces, aborts atomic.Int64
	opens, stats, lists, deletes                  atomic.Int64
	bytesWritten, bytesRead                       atomic.Int64
	createRecords, recordsCreated, getRecords     atomic.Int64
	touchRecords, deleteRecords, listRecords      atomic.Int64
}

func (c *counters) all() []*atomic.Int64 {
	return []*atomic.Int64{
		&c.newWriters, &c.writes, &c.commits, &c.replaces, &c.aborts,
		&c.opens, &c.stats, &c.lists, &c.deletes,
		&c.bytesWritten, &c.bytesRead,
		&c.createRecords, &c.recordsCreated, &c.getRecords,
		&c.touchRecords, &c.deleteRecords, &c.listRecords,
	}
}

// Instrumented wraps a body driver and a record driver, counting every call
// and running the fault-injection Hooks. It implements driver.Bodies,
// driver.Records and driver.Locker, and is safe for concurrent use. It
// keeps the readers' optional capabilities (driver.RangeReader,
// driver.Restatter) and the Bodies' driver.Locker; the others
// (driver.Checker, driver.TempDirer, driver.RecordExpirer,
// driver.IntegrityChecker, driver.ReferenceScanner) are not forwarded, so
// a Store over it takes its fallbacks for them.
type Instrumented struct {
	bodies  driver.Bodies
	records driver.Records
	h       *Hooks
	c       counters
	locks   keylock.Locks // for Bodies that are no driver.Locker
}

var (
	_ driver.Bodies  = (*Instrumented)(nil)
	_ driver.Records = (*Instrumented)(nil)
	_ driver.Locker  = (*Instrumented)(nil)
)

// Instrument wraps b and r, which must not be nil. h may be nil; the fields
// of a non-nil h may be set after Instrument returns, but only before the
// wrapper is first used.
func Instrument(b driver.Bodies, r driver.Records, h *Hooks) *Instrumented {
	if b == nil || r == nil {
		panic("drivertest.Instrument: nil driver")
	}
	if h == nil {
		h = &Hooks{}
	}
	return &Instrumented{bodies: b, records: r, h: h}
}

// Unwrap returns the wrapped drivers.
func (i *Instrumented) Unwrap() (driver.Bodies, driver.Records) { return i.bodies, i.records }

// Counts returns the counts so far. Each field is read atomically.
func (i *Instrumented) Counts() Counts {
	c := &i.c
	return Counts{
		NewWriters: c.newWriters.Load(), Writes: c.writes.Load(),
		Commits: c.commits.Load(), Replaces: c.replaces.Load(), Aborts: c.aborts.Load(),
		Opens: c.opens.Load(), Stats: c.stats.Load(), Lists: c.lists.Load(), Deletes: c.deletes.Load(),
		BytesWritten: c.bytesWritten.Load(), BytesRead: c.bytesRead.Load(),
		CreateRecords: c.createRecords.Load(), RecordsCreated: c.recordsCreated.Load(),
		GetRecords: c.getRecords.Load(), TouchRecords: c.touchRecords.Load(),
		DeleteRecords: c.deleteRecords.Load(), ListRecords: c.listRecords.Load(),
	}
}

// Reset sets every count to zero.
func (i *Instrumented) Reset() {
	for _, v := range i.c.all() {
		v.Store(0)
	}
}

// BodyCalls is the number of body calls so far: NewWriters, Commits, Opens,
// Stats, Lists and Deletes.
func (i *Instrumented) BodyCalls() int64 {
	c := i.Counts()
	return c.NewWriters + c.Commits + c.Opens + c.Stats + c.Lists + c.Deletes
}

// NewWriter implements driver.Bodies.
func (i *Instrumented) NewWriter(ctx context.Context) (driver.Writer, error) {
	i.c.newWriters.Add(1)
	if h := i.h.NewWriter; h != nil {
		if err := h(ctx); err != nil {
			return nil, err
		}
	}
	w, err := i.bodies.NewWriter(ctx)
	if err != nil {
		return nil, err
	}
	return &writer{i: i, w: w}, nil
}

// Open implements driver.Bodies. The reader keeps the wrapped reader's
// optional capabilities (driver.RangeReader, driver.Restatter), no more.
func (i *Instrumented) Open(ctx context.Context, key string) (driver.Reader, error) {
	i.c.opens.Add(1)
	if h := i.h.Open; h != nil {
		if err := h(ctx, key); err != nil {
			return nil, err
		}
	}
	r, err := i.bodies.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return wrapReader(i, r), nil
}

// Stat implements driver.Bodies.
func (i *Instrumented) Stat(ctx context.Context, key string) (driver.Info, error) {
	i.c.stats.Add(1)
	if h := i.h.Stat; h != nil {
		if err := h(ctx, key); err != nil {
			return driver.Info{}, err
		}
	}
	return i.bodies.Stat(ctx, key)
}

// Delete implements driver.Bodies.
func (i *Instrumented) Delete(ctx context.Context, key string) error {
	i.c.deletes.Add(1)
	if h := i.h.Delete; h != nil {
		if err := h(ctx, key); err != nil {
			return err
		}
	}
	return i.bodies.Delete(ctx, key)
}

// List implements driver.Bodies.
func (i *Instrumented) List(ctx context.Context) iter.Seq2[driver.Info, error] {
	i.c.lists.Add(1)
	return i.bodies.List(ctx)
}

// CreateRecord implements driver.Records.
func (i *Instrumented) CreateRecord(ctx context.Context, rec artifact.Record) (bool, error) {
	i.c.createRecords.Add(1)
	if h := i.h.CreateRecord; h != nil {
		if err := h(ctx, rec); err != nil {
			return false, err
		}
	}
	created, err := i.records.CreateRecord(ctx, rec)
	if created && err == nil {
		i.c.recordsCreated.Add(1)
	}
	return created, err
}

// GetRecord implements driver.Records.
func (i *Instrumented) GetRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) (artifact.Record, error) {
	i.c.getRecords.Add(1)
	if h := i.h.GetRecord; h != nil {
		if err := h(ctx, owner, ref); err != nil {
			return artifact.Record{}, err
		}
	}
	return i.records.GetRecord(ctx, owner, ref)
}

// TouchRecord implements driver.Records.
func (i *Instrumented) TouchRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref, at time.Time) error {
	i.c.touchRecords.Add(1)
	if h := i.h.TouchRecord; h != nil {
		if err := h(ctx, owner, ref); err != nil {
			return err
		}
	}
	return i.records.TouchRecord(ctx, owner, ref, at)
}

// DeleteRecord implements driver.Records.
func (i *Instrumented) DeleteRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) error {
	i.c.deleteRecords.Add(1)
	return i.records.DeleteRecord(ctx, owner, ref)
}

// ListRecords implements driver.Records.
func (i *Instrumented) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	i.c.listRecords.Add(1)
	return i.records.ListRecords(ctx, q)
}

// Lock implements driver.Locker: it delegates to the wrapped Bodies when
// they are a driver.Locker, and otherwise takes an in-process lock per key.
func (i *Instrumented) Lock(ctx context.Context, key string) (func() error, error) {
	if l, ok := i.bodies.(driver.Locker); ok {
		return l.Lock(ctx, key)
	}
	return i.locks.Lock(ctx, key)
}

// Tamper overwrites the stored bytes of key in the wrapped Bodies, with
// Overwrite, neither counted nor hooked. It reports whether key held a
// body.
func (i *Instrumented) Tamper(key string, data []byte) bool {
	return Overwrite(i.bodies, key, data)
}

// Overwrite replaces the stored bytes of key with data through b's own
// writer, committed over the body without any check of its digest, to
// simulate corruption in tests of a backend whose storage a test cannot
// reach otherwise (memstore). It reports whether key held a body; a
// driver error fails it too. A body seen through an Instrumented wrapper
// is overwritten underneath it, neither counted nor hooked.
func Overwrite(b driver.Bodies, key string, data []byte) bool {
	for {
		i, ok := b.(*Instrumented)
		if !ok {
			break
		}
		b = i.bodies
	}
	ctx := context.Background()
	if _, err := b.Stat(ctx, key); err != nil {
		return false
	}
	w, err := b.NewWriter(ctx)
	if err != nil {
		return false
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Abort()
		return false
	}
	return w.Commit(ctx, key, true) == nil
}

// Writer states, for counting aborts once.
const (
	writerOpen int32 = iota
	writerCommitted
	writerAborted
)

type writer struct {
	i     *Instrumented
	w     driver.Writer
	state atomic.Int32
}

func (w *writer) Write(p []byte) (int, error) {
	w.i.c.writes.Add(1)
	if h := w.i.h.Write; h != nil {
		if err := h(p); err != nil {
			return 0, err
		}
	}
	n, err := w.w.Write(p)
	w.i.c.bytesWritten.Add(int64(n))
	return n, err
}

func (w *writer) Commit(ctx context.Context, key string, replace bool) error {
	if h := w.i.h.Commit; h != nil {
		if err := h(ctx, key, replace); err != nil {
			return err
		}
	}
	if err := w.w.Commit(ctx, key, replace); err != nil {
		return err
	}
	w.state.CompareAndSwap(writerOpen, writerCommitted)
	if replace {
		w.i.c.replaces.Add(1)
	} else {
		w.i.c.commits.Add(1)
	}
	if h := w.i.h.AfterCommit; h != nil {
		h(ctx, key, replace)
	}
	return nil
}

func (w *writer) Abort() error {
	if w.state.CompareAndSwap(writerOpen, writerAborted) {
		w.i.c.aborts.Add(1)
	}
	return w.w.Abort()
}
