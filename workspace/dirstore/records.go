package dirstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"modernc.org/sqlite"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// schemaVersion is the PRAGMA user_version this code writes and reads.
const schemaVersion = 1

// maxOpenConns bounds the SQLite connections of one Store. SQLite runs one
// writer at a time anyway; a few connections let readers (and a caller that
// writes while iterating ListRecords) proceed.
const maxOpenConns = 4

// schema creates version 1. Times are unix nanoseconds, UTC; 0 is the zero
// time.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS records (
		user         TEXT    NOT NULL,
		workflow     TEXT    NOT NULL,
		session      TEXT    NOT NULL,
		digest       TEXT    NOT NULL,
		size         INTEGER NOT NULL,
		kind         TEXT    NOT NULL,
		tool         TEXT    NOT NULL,
		call_id      TEXT    NOT NULL,
		description  TEXT    NOT NULL,
		created_at   INTEGER NOT NULL,
		last_used_at INTEGER NOT NULL,
		PRIMARY KEY (user, workflow, session, digest)
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS records_digest ON records (digest)`,
	`CREATE INDEX IF NOT EXISTS records_last_used ON records (last_used_at, digest)`,
}

// recordCols lists the columns in the order scanRecord reads them.
const recordCols = `user, workflow, session, digest, size, kind, tool, call_id, description, created_at, last_used_at`

// records is the SQLite half of a Store.
type records struct {
	db      *sql.DB
	creates creates // joins concurrent CreateRecord calls into one commit
	noGroup bool    // Options.noGroup: every call commits alone

	// The statements of every offload decision, prepared once: parsing
	// one cost more than running it.
	get, ins, touch, del *sql.Stmt
}

// dsn builds the modernc.org/sqlite data source name for the database file
// at the absolute path.
func dsn(path string, busy time.Duration) string {
	u := url.URL{Scheme: "file", Path: path}
	q := url.Values{}
	ms := max(busy.Milliseconds(), 1)
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(ms, 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(0)")
	// Every explicit transaction takes the write lock up front, so that two
	// processes never deadlock upgrading a read lock.
	q.Set("_txlock", "immediate")
	return u.String() + "?" + q.Encode()
}

// openRecords opens the database file at path and migrates its schema.
func openRecords(ctx context.Context, path string, busy time.Duration) (*records, error) {
	db, err := sql.Open("sqlite", dsn(path, busy))
	if err != nil {
		return nil, fmt.Errorf("dirstore: open records: %w", err)
	}
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxOpenConns)
	r := &records{db: db}
	// Switching a fresh database to WAL needs an exclusive lock for which
	// SQLite does not always wait, so processes opening one new workspace
	// at once retry a busy migration until the busy timeout.
	deadline := time.Now().Add(max(busy, time.Millisecond))
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err = r.migrate(ctx)
		if err == nil {
			err = r.prepare(ctx)
		}
		if err == nil {
			return r, nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			_ = db.Close()
			return nil, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			_ = db.Close()
			return nil, ctx.Err()
		}
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqliteBusy || c == sqliteLocked
	}
	return false
}

// migrate brings the schema to schemaVersion inside one immediate
// transaction, so that processes opening a new workspace at once create it
// exactly once.
func (r *records) migrate(ctx context.Context) (err error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("dirstore: migrate records: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("dirstore: migrate records: %w", err)
	}
	switch {
	case v == schemaVersion:
	case v > schemaVersion:
		return fmt.Errorf("dirstore: records schema version %d is newer than this program's %d: %w", v, schemaVersion, driver.ErrIncompatible)
	default:
		for _, stmt := range schema {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("dirstore: migrate records: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `PRAGMA user_version = `+strconv.Itoa(schemaVersion)); err != nil {
			return fmt.Errorf("dirstore: migrate records: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("dirstore: migrate records: %w", err)
	}
	return nil
}

// prepare prepares the statements run on every offload decision.
func (r *records) prepare(ctx context.Context) error {
	for _, p := range []struct {
		stmt  **sql.Stmt
		query string
	}{
		{&r.get, `SELECT ` + recordCols + ` FROM records` + whereKey},
		{&r.ins, insertRecord},
		{&r.touch, `UPDATE records SET last_used_at = ?` + whereKey},
		{&r.del, `DELETE FROM records` + whereKey},
	} {
		if *p.stmt != nil {
			continue // prepared by an earlier, busy attempt
		}
		stmt, err := r.db.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("dirstore: prepare records: %w", err)
		}
		*p.stmt = stmt
	}
	return nil
}

func (r *records) close() error {
	for _, stmt := range []*sql.Stmt{r.get, r.ins, r.touch, r.del} {
		if stmt != nil {
			_ = stmt.Close()
		}
	}
	return r.db.Close()
}

// nanos and fromNanos convert times to and from the stored unix nanoseconds;
// the zero time is stored as 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// checkRef rejects the zero reference before any database access.
func checkRef(ref artifact.Ref) error {
	if ref.IsZero() {
		return fmt.Errorf("dirstore: zero reference: %w", fs.ErrInvalid)
	}
	return nil
}

// ownerArgs are the primary-key arguments of (owner, ref).
func ownerArgs(o artifact.Owner, ref artifact.Ref) []any {
	return []any{o.User, o.Workflow, o.Session, ref.Hex()}
}

const whereKey = ` WHERE user = ? AND workflow = ? AND session = ? AND digest = ?`

var errNoRecord = driver.Wrap(driver.ErrNotFound, fmt.Errorf("dirstore: record: %w", fs.ErrNotExist))

// CreateRecord stores rec unless (rec.Owner, rec.Ref) already has a record,
// and reports whether this call created it. The INSERT is atomic, so exactly
// one of any number of concurrent callers, in any process, wins. A record
// that could not be read back as it is (see ErrBadRecord) is refused.
// Concurrent calls of one Store share transactions (see creates); each
// returns only once its own record is committed.
func (s *Store) CreateRecord(ctx context.Context, rec artifact.Record) (_ bool, retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkRef(rec.Ref); err != nil {
		return false, err
	}
	r, err := encodeRecord(rec)
	if err != nil {
		return false, err
	}
	// The record must not outlive a crash its body's name does not.
	if err := s.ensureDurable(r.digest); err != nil {
		return false, fmt.Errorf("dirstore: create record: %w", err)
	}
	created, err := s.rec.create(ctx, r.args())
	if err != nil {
		return false, s.dbErr("create record", err)
	}
	return created, nil
}

// GetRecord returns the record for (owner, ref).
func (s *Store) GetRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) (_ artifact.Record, retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return artifact.Record{}, err
	}
	if err := checkRef(ref); err != nil {
		return artifact.Record{}, err
	}
	row := s.rec.get.QueryRowContext(ctx, ownerArgs(owner, ref)...)
	rec, err := scanRecord(row)
	if errors.Is(err, sql.ErrNoRows) {
		return artifact.Record{}, errNoRecord
	}
	if err != nil {
		return artifact.Record{}, s.dbErr("get record", err)
	}
	return rec, nil
}

// TouchRecord sets the last-used time of the record for (owner, ref).
func (s *Store) TouchRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref, at time.Time) (retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkRef(ref); err != nil {
		return err
	}
	args := append([]any{nanos(at)}, ownerArgs(owner, ref)...)
	return s.explainIOError(s.rec.execOne(ctx, "touch record", s.rec.touch, args...))
}

// DeleteRecord removes the record for (owner, ref).
func (s *Store) DeleteRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) (retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkRef(ref); err != nil {
		return err
	}
	return s.explainIOError(s.rec.execOne(ctx, "delete record", s.rec.del, ownerArgs(owner, ref)...))
}

// execOne runs a statement that must affect exactly one row; none means the
// record is absent.
func (r *records) execOne(ctx context.Context, op string, stmt *sql.Stmt, args ...any) error {
	res, err := stmt.ExecContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("dirstore: %s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("dirstore: %s: %w", op, err)
	}
	if n == 0 {
		return errNoRecord
	}
	return nil
}

// ListRecords yields the records q selects, ordered by last-used time, then
// digest (then owner, so that the order is total). Rows are streamed from
// the database, never loaded all at once.
func (s *Store) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	return markSeq(func(yield func(artifact.Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(artifact.Record{}, err)
			return
		}
		var where []string
		var args []any
		if q.Owner != nil {
			where = append(where, `user = ?`, `workflow = ?`, `session = ?`)
			args = append(args, q.Owner.User, q.Owner.Workflow, q.Owner.Session)
		}
		if !q.Ref.IsZero() {
			where = append(where, `digest = ?`)
			args = append(args, q.Ref.Hex())
		}
		if !q.UnusedSince.IsZero() {
			where = append(where, `last_used_at < ?`)
			args = append(args, nanos(q.UnusedSince))
		}
		query := `SELECT ` + recordCols + ` FROM records`
		if len(where) > 0 {
			query += ` WHERE ` + strings.Join(where, ` AND `)
		}
		query += ` ORDER BY last_used_at, digest, user, workflow, session`
		rows, err := s.rec.db.QueryContext(ctx, query, args...)
		if err != nil {
			yield(artifact.Record{}, s.dbErr("list records", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			rec, err := scanRecord(rows)
			if err != nil {
				yield(artifact.Record{}, s.dbErr("list records", err))
				return
			}
			if !yield(rec, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(artifact.Record{}, s.dbErr("list records", err))
		}
	})
}

// scanRecord reads one row of recordCols.
func scanRecord(sc interface{ Scan(...any) error }) (artifact.Record, error) {
	var r row
	if err := sc.Scan(r.dest()...); err != nil {
		return artifact.Record{}, err
	}
	return decodeRecord(r)
}

// expireBatch is how many records one ExpireRecords statement deletes, so
// that no write transaction holds the database for long.
const expireBatch = 512

// ExpireRecords deletes every record last used before cutoff, in batches,
// and returns how many it deleted. Each record is deleted by a statement
// that re-checks its last-used time, so a record touched concurrently is
// kept. It implements the workspace's optional record-expiry capability.
func (s *Store) ExpireRecords(ctx context.Context, cutoff time.Time) (_ int64, retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c := nanos(cutoff)
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		res, err := s.rec.db.ExecContext(ctx,
			`DELETE FROM records WHERE last_used_at < ?1 AND (user, workflow, session, digest) IN
			(SELECT user, workflow, session, digest FROM records WHERE last_used_at < ?1 LIMIT ?2)`,
			c, expireBatch)
		if err != nil {
			return total, s.dbErr("expire records", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, s.dbErr("expire records", err)
		}
		total += n
		if n == 0 {
			return total, nil
		}
	}
}
