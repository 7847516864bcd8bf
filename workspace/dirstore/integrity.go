package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strconv"

	"modernc.org/sqlite"

	"github.com/hybridctx/hybridctx/workspace/driver"
)

// The Store's capabilities beyond the driver roles of dirstore.go.
var (
	_ driver.IntegrityChecker = (*Store)(nil)
	_ driver.ReferenceScanner = (*Store)(nil)
)

// ErrNoWorkspace is wrapped by Open's error when Options.MustExist is set and
// the directory holds no workspace. It also wraps fs.ErrNotExist.
var ErrNoWorkspace = fmt.Errorf("no workspace in the directory: %w", fs.ErrNotExist)

// holdsWorkspace reports whether dir holds a workspace: its records
// database as a regular file.
func holdsWorkspace(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, dbName))
	return err == nil && fi.Mode().IsRegular()
}

// SQLite primary result codes that mean the database file itself is
// damaged (SQLITE_CORRUPT, SQLITE_NOTADB), or that reading or writing it
// failed (SQLITE_IOERR).
const (
	sqliteIOErr   = 10
	sqliteCorrupt = 11
	sqliteNotADB  = 26
)

// ErrWALDeleted is wrapped by the error of Open, and of the database
// operations that fail for it, when the write-ahead log records.db-wal was
// deleted while a process still had the database open: the other processes
// then cannot read the database (SQLite reports a disk I/O error). No record
// is lost as long as the processes that hold the log exit normally: the last
// one writes it back into records.db. Scrub reports the same condition.
var ErrWALDeleted = errors.New("the records database's write-ahead log " + dbName + "-wal was deleted while a process had the database open")

// Problems CheckIntegrity reports, categorical by design: SQLite's own
// messages name tables, pages and rows, which a report does not need.
const (
	problemIntegrity  = "SQLite integrity check failed"
	problemCorrupt    = "SQLite reports the database file is damaged"
	problemWALDeleted = "deleted while the database is open; let every process using this workspace exit normally, then retry"
)

// CheckIntegrity runs SQLite's full integrity check (PRAGMA
// integrity_check), which verifies every page and that each index holds
// exactly the rows of its table, and reports any problem against
// records.db. It implements driver.IntegrityChecker. It reads the whole
// database once; its cost grows with the number of records.
func (s *Store) CheckIntegrity(ctx context.Context) (_ []driver.Damage, retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.rec == nil {
		return nil, nil // a bodies-only Store (tests) has no database
	}
	// While this Store has the database open in WAL mode, SQLite keeps
	// the log file; its absence means someone deleted it.
	if s.walDeleted() {
		return []driver.Damage{{Part: dbName + "-wal", Problem: problemWALDeleted}}, nil
	}
	rows, err := s.rec.db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return s.integrityError(err)
	}
	defer rows.Close()
	problems := 0
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return s.integrityError(err)
		}
		if line != "ok" {
			problems++
		}
	}
	if err := rows.Err(); err != nil {
		return s.integrityError(err)
	}
	if problems == 0 {
		return nil, nil
	}
	return []driver.Damage{{Part: dbName, Problem: problemIntegrity + " (" + strconv.Itoa(problems) + " problems)"}}, nil
}

// walDeleted reports whether this process holds the write-ahead log of its
// database open although its name was deleted (Linux lists such a file in
// /proc/self/fd as "PATH (deleted)").
func (s *Store) walDeleted() bool {
	target := filepath.Join(s.dir, dbName+"-wal") + " (deleted)"
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && l == target {
			return true
		}
	}
	return false
}

// explainIOError wraps ErrWALDeleted into a SQLite I/O error met while
// opening the database when the write-ahead log is gone, or empty (SQLite
// has just created it again) while its shared-memory index, which another
// process keeps, still describes logged pages.
func (s *Store) explainIOError(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) || se.Code()&0xff != sqliteIOErr {
		return err
	}
	wal, werr := os.Lstat(filepath.Join(s.dir, dbName+"-wal"))
	shm, serr := os.Lstat(filepath.Join(s.dir, dbName+"-shm"))
	if serr == nil && shm.Size() > 0 && (errors.Is(werr, fs.ErrNotExist) || werr == nil && wal.Size() == 0) {
		return fmt.Errorf("%w: %w", ErrWALDeleted, err)
	}
	return err
}

// dbErr wraps an error of the database operation op, explaining a SQLite
// I/O error by a deleted write-ahead log when that is its cause.
func (s *Store) dbErr(op string, err error) error {
	return s.explainIOError(fmt.Errorf("dirstore: %s: %w", op, err))
}

// integrityError turns a failure of the check into damage when SQLite says
// the file is damaged, and into an error otherwise.
func (s *Store) integrityError(err error) ([]driver.Damage, error) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteCorrupt, sqliteNotADB:
			return []driver.Damage{{Part: dbName, Problem: problemCorrupt}}, nil
		}
	}
	err = s.dbErr("integrity check", err)
	if errors.Is(err, ErrWALDeleted) {
		return []driver.Damage{{Part: dbName + "-wal", Problem: problemWALDeleted}}, nil
	}
	return nil, err
}

// ScanReferences yields the digest and last-used time of every record,
// reading the records table itself (NOT INDEXED) rather than any index, so
// a damaged index cannot hide a record. It implements
// driver.ReferenceScanner.
func (s *Store) ScanReferences(ctx context.Context) iter.Seq2[driver.Reference, error] {
	return markSeq(func(yield func(driver.Reference, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(driver.Reference{}, err)
			return
		}
		rows, err := s.rec.db.QueryContext(ctx, `SELECT digest, last_used_at FROM records NOT INDEXED`)
		if err != nil {
			yield(driver.Reference{}, s.dbErr("scan records", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var ref driver.Reference
			var used int64
			if err := rows.Scan(&ref.Key, &used); err != nil {
				yield(driver.Reference{}, s.dbErr("scan records", err))
				return
			}
			ref.LastUsedAt = fromNanos(used)
			if !yield(ref, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(driver.Reference{}, s.dbErr("scan records", err))
		}
	})
}
