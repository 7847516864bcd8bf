package dirstore

import (
	"errors"
	"iter"

	"github.com/hybridctx/hybridctx/workspace/driver"
	"modernc.org/sqlite"
)

// SQLite primary result codes mapped to portable categories besides those
// of integrity.go.
const (
	sqlitePerm     = 3
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteReadOnly = 8
	sqliteFull     = 13
)

// classify marks err with the portable category of its cause
// (docs/workspace.md, "Error categories"): a deleted write-ahead log is
// ErrDetached, the operating system's errors what driver.FromOS says, a
// damaged database file ErrDamaged, a full database ErrNoSpace, a lock
// another process kept ErrBusy, an I/O error of SQLite's ErrIO. An error
// already marked, or of none of these causes, is returned as it is.
func classify(err error) error {
	if err == nil || driver.Category(err) != nil {
		return err
	}
	if errors.Is(err, ErrWALDeleted) {
		return driver.Wrap(driver.ErrDetached, err)
	}
	// The operating system's errors first: a SQLite error wraps none, and
	// an absent file, the common case, then costs one allocation.
	if marked := driver.FromOS(err); marked != err {
		return marked
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteCorrupt, sqliteNotADB:
			return driver.Wrap(driver.ErrDamaged, err)
		case sqliteFull:
			return driver.Wrap(driver.ErrNoSpace, err)
		case sqliteBusy, sqliteLocked:
			return driver.Wrap(driver.ErrBusy, err)
		case sqliteReadOnly:
			return driver.Wrap(driver.ErrReadOnly, err)
		case sqlitePerm:
			return driver.Wrap(driver.ErrPermission, err)
		case sqliteIOErr:
			return driver.Wrap(driver.ErrIO, err)
		}
	}
	return err
}

// markErr classifies the error *p in place; the exported methods defer it.
func markErr(p *error) { *p = classify(*p) }

// markSeq classifies the errors seq yields.
func markSeq[T any](seq iter.Seq2[T, error]) iter.Seq2[T, error] {
	return driver.ClassifySeq(seq, classify)
}
