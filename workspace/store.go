// Package workspace is the authoritative store of hybridctx: immutable bodies
// addressed by their SHA-256 digest, and per-owner records that bind owners to
// bodies. The portable Store type sits over two narrow drivers (package
// driver): it hashes while writing, verifies while reading, checks sizes and
// wraps errors, so that drivers stay dumb byte and row stores.
package workspace

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"iter"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// Store is the workspace. It is safe for concurrent use. Construct it with
// New, or with package backend from a URL.
type Store struct {
	bodies  driver.Bodies
	records driver.Records
	locker  driver.Locker // the bodies driver's per-body lock; nil if it has none

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	// verifyHashed counts the bytes VerifyBody has hashed, for the tests
	// that prove a reuse of in-memory bytes compares instead.
	verifyHashed atomic.Int64
}

// New returns a Store over the given drivers. They may be the same value.
func New(bodies driver.Bodies, records driver.Records) *Store {
	if bodies == nil || records == nil {
		panic("workspace.New: nil driver")
	}
	l, _ := bodies.(driver.Locker)
	return &Store{bodies: bodies, records: records, locker: l}
}

// Close closes the drivers that implement io.Closer, once each.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		var errs []error
		if c, ok := s.bodies.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
		if c, ok := s.records.(io.Closer); ok && !same(s.records, s.bodies) {
			errs = append(errs, c.Close())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// TempDir returns the workspace's temporary area on local disk (see
// driver.TempDirer), or "" when its backend has none (memory, PostgreSQL,
// S3): a caller then uses its own temporary directory.
func (s *Store) TempDir() string {
	if t, ok := s.bodies.(driver.TempDirer); ok {
		return t.TempDir()
	}
	return ""
}

// StatBody describes a committed body without reading it. An absent body
// wraps fs.ErrNotExist.
func (s *Store) StatBody(ctx context.Context, ref artifact.Ref) (driver.Info, error) {
	if err := s.check(ctx, ref); err != nil {
		return driver.Info{}, wrap("stat", ref, err)
	}
	info, err := s.bodies.Stat(ctx, ref.Hex())
	return info, wrap("stat", ref, err)
}

// DeleteBody removes a body. It is meant for garbage collection and repair
// only: records that point at it will resolve as missing.
func (s *Store) DeleteBody(ctx context.Context, ref artifact.Ref) error {
	if err := s.check(ctx, ref); err != nil {
		return wrap("delete", ref, err)
	}
	return wrap("delete", ref, s.bodies.Delete(ctx, ref.Hex()))
}

// ListBodies yields every committed body.
func (s *Store) ListBodies(ctx context.Context) iter.Seq2[driver.Info, error] {
	return func(yield func(driver.Info, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(driver.Info{}, wrap("list", artifact.Ref{}, err))
			return
		}
		if s.closed.Load() {
			yield(driver.Info{}, wrap("list", artifact.Ref{}, ErrClosed))
			return
		}
		for info, err := range s.bodies.List(ctx) {
			if !yield(info, wrap("list", artifact.Ref{}, err)) || err != nil {
				return
			}
		}
	}
}

// CreateRecord stores rec unless its owner already has a record for its
// body, and reports whether this call created it.
func (s *Store) CreateRecord(ctx context.Context, rec artifact.Record) (bool, error) {
	if err := s.checkOwner(ctx, rec.Owner, rec.Ref); err != nil {
		return false, wrap("record", rec.Ref, err)
	}
	return s.createRecord(ctx, rec)
}

// createRecord is CreateRecord for an owner and reference already checked.
func (s *Store) createRecord(ctx context.Context, rec artifact.Record) (bool, error) {
	if rec.Size < 0 {
		return false, wrap("record", rec.Ref, errors.New("negative size"))
	}
	if len(rec.Tool) > artifact.MaxCallFieldLen || len(rec.CallID) > artifact.MaxCallFieldLen {
		return false, wrap("record", rec.Ref, ErrCallFieldTooLong)
	}
	rec.Description = artifact.TruncateUTF8(rec.Description, artifact.MaxDescriptionLen)
	rec.CreatedAt = rec.CreatedAt.UTC()
	rec.LastUsedAt = rec.LastUsedAt.UTC()
	created, err := s.records.CreateRecord(ctx, rec)
	return created, wrap("record", rec.Ref, err)
}

// GetRecord returns owner's record for ref. An absent record wraps
// fs.ErrNotExist.
func (s *Store) GetRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) (artifact.Record, error) {
	if err := s.checkOwner(ctx, owner, ref); err != nil {
		return artifact.Record{}, wrap("record", ref, err)
	}
	rec, err := s.records.GetRecord(ctx, owner, ref)
	return rec, wrap("record", ref, err)
}

// TouchRecord sets the last-used time of owner's record for ref.
func (s *Store) TouchRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref, at time.Time) error {
	if err := s.checkOwner(ctx, owner, ref); err != nil {
		return wrap("touch", ref, err)
	}
	return wrap("touch", ref, s.records.TouchRecord(ctx, owner, ref, at.UTC()))
}

// DeleteRecord removes owner's record for ref.
func (s *Store) DeleteRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) error {
	if err := s.checkOwner(ctx, owner, ref); err != nil {
		return wrap("delete record", ref, err)
	}
	return wrap("delete record", ref, s.records.DeleteRecord(ctx, owner, ref))
}

// Query selects records; it is driver.Query, named here so that callers of
// the Store need not import the driver contract.
type Query = driver.Query

// ListRecords yields the records q selects, oldest last use first.
func (s *Store) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	return func(yield func(artifact.Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(artifact.Record{}, wrap("list records", artifact.Ref{}, err))
			return
		}
		if s.closed.Load() {
			yield(artifact.Record{}, wrap("list records", artifact.Ref{}, ErrClosed))
			return
		}
		if q.Owner != nil {
			if err := q.Owner.Validate(); err != nil {
				yield(artifact.Record{}, wrap("list records", artifact.Ref{}, err))
				return
			}
		}
		for rec, err := range s.records.ListRecords(ctx, q) {
			if !yield(rec, wrap("list records", artifact.Ref{}, err)) || err != nil {
				return
			}
		}
	}
}

// UnsafePermissions lists stored objects whose permissions are broader than
// private, for backends that can tell; others return errors.ErrUnsupported.
func (s *Store) UnsafePermissions(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, wrap("permissions", artifact.Ref{}, ErrClosed)
	}
	drivers := []any{s.bodies}
	if !same(s.records, s.bodies) {
		drivers = append(drivers, s.records)
	}
	var out []string
	found := false
	for _, d := range drivers {
		c, ok := d.(driver.Checker)
		if !ok {
			continue
		}
		found = true
		p, err := c.UnsafePermissions(ctx)
		if err != nil {
			return nil, wrap("permissions", artifact.Ref{}, err)
		}
		out = append(out, p...)
	}
	if !found {
		return nil, errors.ErrUnsupported
	}
	return out, nil
}

// ErrCallFieldTooLong is returned by CreateRecord for a tool name or call id
// longer than artifact.MaxCallFieldLen.
var ErrCallFieldTooLong = errors.New("tool name or call id too long")

// ErrInvalidRef is returned for a zero reference given to the Store.
var ErrInvalidRef = errors.New("zero reference")

func (s *Store) check(ctx context.Context, ref artifact.Ref) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	if ref.IsZero() {
		return ErrInvalidRef
	}
	return nil
}

// same reports whether two drivers are the same value, without panicking on
// values that cannot be compared.
func same(a, b any) (eq bool) {
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) || !ta.Comparable() {
		return false
	}
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return a == b
}

func (s *Store) checkOwner(ctx context.Context, owner artifact.Owner, ref artifact.Ref) error {
	if err := s.check(ctx, ref); err != nil {
		return err
	}
	return owner.Validate()
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
