// Package driver defines the narrow interfaces a workspace backend implements.
// Backends are dumb stores: workspace.Store owns hashing, verification, key
// choice and error wrapping, and one conformance suite (package drivertest)
// runs unchanged against every backend.
//
// # Errors
//
// A driver marks every error it returns with the portable category of its
// cause (errors.go; docs/workspace.md, "Error categories"), keeping its own
// error in the chain: an absent body or record is in ErrNotFound (which
// also matches fs.ErrNotExist), a create-only commit that found the key
// taken in ErrAlreadyExists (also fs.ErrExist), an unreachable backend in
// ErrUnavailable, and so on. An error in no category is treated as a
// storage failure of no known kind.
package driver

import (
	"context"
	"io"
	"iter"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
)

// Bodies stores immutable byte bodies under keys. A key is always the 64-digit
// lowercase hex SHA-256 of the body; drivers may rely on that shape for their
// layout but must not trust it for safety.
type Bodies interface {
	// NewWriter starts a new body, whose key (its digest) is only known
	// when it is committed. Nothing is visible until Commit succeeds.
	NewWriter(ctx context.Context) (Writer, error)
	// Open opens the committed body for reading from its start.
	Open(ctx context.Context, key string) (Reader, error)
	// Stat describes the committed body without reading it.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the committed body. An absent body wraps fs.ErrNotExist.
	Delete(ctx context.Context, key string) error
	// List yields every committed body, in no particular order.
	List(ctx context.Context) iter.Seq2[Info, error]
}

// Writer receives one body. A successful Commit or an Abort ends it; calling
// Abort after Commit is a no-op, so `defer w.Abort()` is always safe. A
// Commit that fails with fs.ErrExist leaves the writer open, so the caller
// may Commit again with replace set, or Abort.
type Writer interface {
	io.Writer
	// Commit makes the written bytes durable and then visible under key.
	// With replace false it is create-only: if the key already holds a
	// body the existing body is kept and the error wraps fs.ErrExist. With
	// replace true the written bytes atomically take the key's place; a
	// reader never sees a partial body either way.
	Commit(ctx context.Context, key string, replace bool) error
	// Abort discards the written bytes.
	Abort() error
}

// Reader reads one committed body from its start.
type Reader interface {
	io.Reader
	io.Closer
	// Info describes the body this reader was opened on.
	Info() Info
}

// RangeReader is an optional Reader capability: reading at an offset of the
// same opened body (for example an open file descriptor). Its reason is
// correctness: a body verified by a first pass is served by a second pass
// over the very bytes verified, where reopening it could serve a body
// replaced in between.
type RangeReader interface {
	io.ReaderAt
}

// Restatter is an optional Reader capability: describing the opened body
// again. Its reason is correctness: a caller detects that the body changed
// while it was being read, instead of serving bytes it did not verify.
type Restatter interface {
	Restat() (Info, error)
}

// Info describes a committed body.
type Info struct {
	// Key is the body's key (its hex digest).
	Key string
	// Size is the body's length in bytes.
	Size int64
	// ModTime is when the body was committed, if the backend knows.
	ModTime time.Time
	// Version changes whenever the stored bytes could have changed (an
	// inode/size/mtime triple, an ETag, ...). Empty when unknown.
	Version string
}

// Records keeps the per-owner records that bind owners to bodies.
type Records interface {
	// CreateRecord stores rec if no record exists for (rec.Owner, rec.Ref).
	// It reports whether this call created it; exactly one of any number of
	// concurrent calls for the same pair reports true.
	CreateRecord(ctx context.Context, rec artifact.Record) (created bool, err error)
	// GetRecord returns the record for (owner, ref); absent wraps fs.ErrNotExist.
	GetRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) (artifact.Record, error)
	// TouchRecord sets the record's last-used time; absent wraps fs.ErrNotExist.
	TouchRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref, at time.Time) error
	// DeleteRecord removes the record; absent wraps fs.ErrNotExist.
	DeleteRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) error
	// ListRecords yields records matching q, ordered by last-used time, then
	// reference.
	ListRecords(ctx context.Context, q Query) iter.Seq2[artifact.Record, error]
}

// Query selects records. The zero Query selects every record.
type Query struct {
	// Owner, when non-nil, restricts to that owner's records.
	Owner *artifact.Owner
	// Ref, when non-zero, restricts to records of that body.
	Ref artifact.Ref
	// UnusedSince, when non-zero, restricts to records last used before it.
	UnusedSince time.Time
}

// Locker is an optional capability of Bodies: a mutual-exclusion lock per key
// that holds across every process sharing the backend. The Store takes it on
// the repair path, so that exactly one caller replaces a corrupt body, and
// around garbage collection of a body and the reuse of a stored body by a
// new record, so that collection never deletes a body a record points to.
type Locker interface {
	Lock(ctx context.Context, key string) (unlock func() error, err error)
}

// Checker is an optional capability of a backend: reporting stored objects
// whose access permissions are broader than private, which would expose
// one owner's tool results to other local users. Paths are relative to the
// workspace root.
type Checker interface {
	UnsafePermissions(ctx context.Context) ([]string, error)
}

// TempDirer is an optional capability of Bodies kept on a local file
// system: TempDir names a directory, private to the workspace's owner,
// where a caller may spool data it cannot hold in memory (the MCP proxy's
// large messages). A file created there under a name starting with
// TempPrefix that no process holds flock(2)ed is removed the next time the
// backend is opened, so a spool left by a killed process does not stay:
// its reason is that the spool of a tool result stays as private and as
// bounded in time as the workspace that holds the result.
type TempDirer interface {
	TempDir() string
}

// TempPrefix starts the name of every temporary file in a TempDirer's
// directory.
const TempPrefix = ".tmp-"

// RecordExpirer is an optional capability of Records: deleting the records
// last used before cutoff, each in one atomic step that re-checks its
// last-used time, so that a record touched meanwhile is kept (SQL: DELETE …
// WHERE last_used_at < cutoff). Garbage collection uses it when the driver
// has it, and otherwise re-reads each stale record just before deleting it,
// which leaves a short window in which a concurrent touch can be lost.
type RecordExpirer interface {
	ExpireRecords(ctx context.Context, cutoff time.Time) (deleted int64, err error)
}
