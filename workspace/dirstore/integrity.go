package dirstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"modernc.org/sqlite"

	"github.com/hybridctx/hybridctx/workspace/driver"
)

// SQLite primary result codes that mean the database file itself is
// damaged (SQLITE_CORRUPT, SQLITE_NOTADB).
const (
	sqliteCorrupt = 11
	sqliteNotADB  = 26
)

// Problems CheckIntegrity reports, categorical by design: SQLite's own
// messages name tables, pages and rows, which a report does not need.
const (
	problemIntegrity = "SQLite integrity check failed"
	problemCorrupt   = "SQLite reports the database file is damaged"
)

// CheckIntegrity runs SQLite's full integrity check (PRAGMA
// integrity_check), which verifies every page and that each index holds
// exactly the rows of its table, and reports any problem against
// records.db. It implements driver.IntegrityChecker. It reads the whole
// database once; its cost grows with the number of records.
func (s *Store) CheckIntegrity(ctx context.Context) ([]driver.Damage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.rec == nil {
		return nil, nil // a bodies-only Store (tests) has no database
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
	return nil, fmt.Errorf("dirstore: integrity check: %w", err)
}

// ScanReferences yields the digest and last-used time of every record,
// reading the records table itself (NOT INDEXED) rather than any index, so
// a damaged index cannot hide a record. It implements
// driver.ReferenceScanner.
func (s *Store) ScanReferences(ctx context.Context) iter.Seq2[driver.Reference, error] {
	return func(yield func(driver.Reference, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(driver.Reference{}, err)
			return
		}
		rows, err := s.rec.db.QueryContext(ctx, `SELECT digest, last_used_at FROM records NOT INDEXED`)
		if err != nil {
			yield(driver.Reference{}, fmt.Errorf("dirstore: scan records: %w", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var ref driver.Reference
			var used int64
			if err := rows.Scan(&ref.Key, &used); err != nil {
				yield(driver.Reference{}, fmt.Errorf("dirstore: scan records: %w", err))
				return
			}
			ref.LastUsedAt = fromNanos(used)
			if !yield(ref, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(driver.Reference{}, fmt.Errorf("dirstore: scan records: %w", err))
		}
	}
}
