package driver

import (
	"errors"
	"io/fs"
	"iter"
	"slices"
	"syscall"
)

// Errors a driver wraps for the Store to recognise; package workspace
// re-exports them, so callers test workspace.ErrTooLarge and
// workspace.ErrChanged with errors.Is.
var (
	// ErrTooLarge means a body exceeded the size limit it was written
	// under (the Store's MaxBytes, or a backend's own largest body).
	ErrTooLarge = errors.New("body exceeds the size limit")
	// ErrChanged means a body changed while it was being read.
	ErrChanged = errors.New("stored body changed while it was read")
)

// The portable error categories (docs/workspace.md, "Error categories").
// Every driver marks the errors it returns with the one category that
// describes their cause, wrapping them with Wrap (or returning an error
// that wraps the category), so that a caller tests errors.Is(err,
// driver.ErrNotFound) whatever the backend, and the driver's own error
// stays in the chain for logs. An error in no category is a storage
// failure of no known kind. Context errors are not categories: a driver
// returns ctx.Err() (wrapped or not) and callers test context.Canceled.
//
// ErrNotFound, ErrAlreadyExists and ErrPermission also match
// fs.ErrNotExist, fs.ErrExist and fs.ErrPermission under errors.Is.
var (
	// ErrNotFound means the body or record asked for is absent.
	ErrNotFound error = &category{"not found", fs.ErrNotExist}
	// ErrAlreadyExists means a create-only write found its key taken.
	ErrAlreadyExists error = &category{"already exists", fs.ErrExist}
	// ErrPermission means the backend refused access to its storage (file
	// modes, database privileges, a bucket policy).
	ErrPermission error = &category{"permission denied", fs.ErrPermission}
	// ErrUnavailable means the backend cannot be reached or refused this
	// process: no server at the address, a name that does not resolve,
	// wrong credentials, a bucket that does not exist. It is a
	// configuration or network problem; retrying unchanged rarely helps.
	// (A backend this build lacks is backend.ErrNotBuilt, not this.)
	ErrUnavailable error = &category{"backend not available", nil}
	// ErrBusy means another process held the backend's lock longer than
	// this one waited; retrying later may succeed.
	ErrBusy error = &category{"backend busy", nil}
	// ErrDetached means a process that still has the backend open keeps
	// data this process cannot reach, because a part of the storage was
	// deleted under it; the data comes back when every such process exits
	// normally, and the operation may then be retried.
	ErrDetached error = &category{"backend storage detached from its open users", nil}
	// ErrNoSpace means the storage is full: no space left on the device,
	// a quota or a database size limit reached.
	ErrNoSpace error = &category{"no space left", nil}
	// ErrReadOnly means the storage accepts no writes (a read-only file
	// system or database).
	ErrReadOnly error = &category{"storage is read-only", nil}
	// ErrDamaged means the backend's own records or indexes are damaged
	// (data loss); verifying the workspace says what.
	ErrDamaged error = &category{"workspace storage is damaged", nil}
	// ErrIO means the storage could not be read or written for a reason
	// the backend cannot name better (an I/O error of the device or the
	// database engine).
	ErrIO error = &category{"storage input/output error", nil}
	// ErrIncompatible means the backend holds data in a layout or version
	// this build cannot use.
	ErrIncompatible error = &category{"storage layout cannot be used by this build", nil}
)

// categories lists every portable category once.
var categories = []error{ErrNotFound, ErrAlreadyExists, ErrPermission, ErrUnavailable, ErrBusy,
	ErrDetached, ErrNoSpace, ErrReadOnly, ErrDamaged, ErrIO, ErrIncompatible}

// Categories returns every portable category once, in a fixed order, for
// conformance tests and for callers that map each to something of their
// own.
func Categories() []error { return slices.Clone(categories) }

// category is a portable error category; std is the io/fs sentinel it
// also matches, if any.
type category struct {
	msg string
	std error
}

func (c *category) Error() string { return c.msg }

// Is reports whether target is the io/fs sentinel the category matches.
func (c *category) Is(target error) bool { return c.std != nil && target == c.std }

// Wrap marks err with category cat, one of the categories above: the
// result matches both cat and everything err matches under errors.Is and
// errors.As, and its message is err's own. Wrap returns nil for a nil err,
// and err itself when err is already in cat.
func Wrap(cat, err error) error {
	if err == nil || errors.Is(err, cat) {
		return err
	}
	return &categorized{errs: [2]error{err, cat}}
}

// categorized is an error marked with a category.
type categorized struct {
	errs [2]error // the error, its category
}

func (e *categorized) Error() string { return e.errs[0].Error() }

// Unwrap returns the error and its category; the slice is the value's own,
// so errors.Is over a miss allocates nothing.
func (e *categorized) Unwrap() []error { return e.errs[:] }

// Category returns the portable category err is marked with, or nil when
// it is in none (an error that only wraps fs.ErrNotExist is in none). An
// error marked with several returns the first in Categories' order.
func Category(err error) error {
	if err == nil {
		return nil
	}
	for _, c := range categories {
		if errors.Is(err, c) {
			return c
		}
	}
	return nil
}

// FromOS marks err with the category its operating-system cause names: a
// missing file (ErrNotFound), an existing one (ErrAlreadyExists), a refused
// access (ErrPermission), a full device or quota (ErrNoSpace), a read-only
// file system (ErrReadOnly), a refused or unroutable connection
// (ErrUnavailable), an I/O error (ErrIO). An error already in a category,
// and any other error, is returned as it is.
func FromOS(err error) error {
	switch {
	case err == nil || Category(err) != nil:
		return err
	case errors.Is(err, fs.ErrNotExist):
		return Wrap(ErrNotFound, err)
	case errors.Is(err, fs.ErrExist):
		return Wrap(ErrAlreadyExists, err)
	case errors.Is(err, syscall.EROFS):
		return Wrap(ErrReadOnly, err)
	case errors.Is(err, fs.ErrPermission):
		return Wrap(ErrPermission, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return Wrap(ErrNoSpace, err)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return Wrap(ErrUnavailable, err)
	case errors.Is(err, syscall.EIO):
		return Wrap(ErrIO, err)
	}
	return err
}

// ClassifySeq returns seq with each error it yields passed through
// classify, so that a driver's iterators report the categories its
// methods do.
func ClassifySeq[T any](seq iter.Seq2[T, error], classify func(error) error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for v, err := range seq {
			if !yield(v, classify(err)) {
				return
			}
		}
	}
}
