package pgstore

import (
	"context"
	"fmt"
	"io/fs"
	"iter"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

const recordColumns = `owner_user, owner_workflow, owner_session, digest, size, kind, tool, call_id, description, created_at, last_used_at`

// CreateRecord inserts rec unless its (owner, digest) pair exists. With
// bodies in PostgreSQL a record for an absent body is refused with an error
// wrapping fs.ErrNotExist. Times are kept to the microsecond.
func (s *Store) CreateRecord(ctx context.Context, rec artifact.Record) (_ bool, retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return false, err
	}
	sum := rec.Ref.Sum()
	tag, err := s.pool.Exec(ctx, `INSERT INTO hybridctx_records (`+recordColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`,
		rec.Owner.User, rec.Owner.Workflow, rec.Owner.Session, sum[:], rec.Size,
		text(rec.Kind), text(rec.Tool), text(rec.CallID), text(rec.Description),
		rec.CreatedAt.UTC(), rec.LastUsedAt.UTC())
	switch {
	case pgCode(err) == codeForeignKey:
		return false, fmt.Errorf("pgstore: record for an absent body: %w", fs.ErrNotExist)
	case err != nil:
		return false, fail(ctx, "create record", err)
	}
	return tag.RowsAffected() == 1, nil
}

// text makes s storable as PostgreSQL text: invalid UTF-8 and NUL bytes
// become U+FFFD. Owners never need it (artifact.Owner.Validate refuses
// them); tool names, call ids and descriptions might.
func text(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

const pairMatch = `owner_user = $1 AND owner_workflow = $2 AND owner_session = $3 AND digest = $4`

// GetRecord returns the record of (owner, ref).
func (s *Store) GetRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) (_ artifact.Record, retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return artifact.Record{}, err
	}
	sum := ref.Sum()
	rows, err := s.pool.Query(ctx, `SELECT `+recordColumns+` FROM hybridctx_records WHERE `+pairMatch,
		owner.User, owner.Workflow, owner.Session, sum[:])
	if err != nil {
		return artifact.Record{}, fail(ctx, "get record", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return artifact.Record{}, fail(ctx, "get record", err)
		}
		return artifact.Record{}, fmt.Errorf("pgstore: get record: %w", fs.ErrNotExist)
	}
	rec, err := scanRecord(rows)
	if err != nil {
		return artifact.Record{}, fail(ctx, "get record", err)
	}
	return rec, nil
}

// TouchRecord sets the record's last-used time.
func (s *Store) TouchRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref, at time.Time) (retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return err
	}
	sum := ref.Sum()
	tag, err := s.pool.Exec(ctx, `UPDATE hybridctx_records SET last_used_at = $5 WHERE `+pairMatch,
		owner.User, owner.Workflow, owner.Session, sum[:], at.UTC())
	if err != nil {
		return fail(ctx, "touch record", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: touch record: %w", fs.ErrNotExist)
	}
	return nil
}

// DeleteRecord removes the record of (owner, ref).
func (s *Store) DeleteRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) (retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return err
	}
	sum := ref.Sum()
	tag, err := s.pool.Exec(ctx, `DELETE FROM hybridctx_records WHERE `+pairMatch,
		owner.User, owner.Workflow, owner.Session, sum[:])
	if err != nil {
		return fail(ctx, "delete record", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: delete record: %w", fs.ErrNotExist)
	}
	return nil
}

// recordKey is the total order of ListRecords, and its resume point.
type recordKey struct {
	used   time.Time
	digest []byte
	owner  artifact.Owner
}

// ListRecords yields the records q selects ordered by last-used time, then
// reference, then owner. It fetches a page at a time, so no connection is
// held while the caller works; a record touched during the iteration may
// therefore be seen twice or not at all.
func (s *Store) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	return paged(func() error { return s.check(ctx) }, (*recordKey)(nil), func(after *recordKey) ([]artifact.Record, error) {
		return s.recordPage(ctx, q, after)
	}, func(last artifact.Record) *recordKey {
		sum := last.Ref.Sum()
		return &recordKey{used: last.LastUsedAt, digest: sum[:], owner: last.Owner}
	})
}

func (s *Store) recordPage(ctx context.Context, q driver.Query, after *recordKey) ([]artifact.Record, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.Owner != nil {
		where = append(where, "owner_user = "+arg(q.Owner.User), "owner_workflow = "+arg(q.Owner.Workflow),
			"owner_session = "+arg(q.Owner.Session))
	}
	if !q.Ref.IsZero() {
		sum := q.Ref.Sum()
		where = append(where, "digest = "+arg(sum[:]))
	}
	if !q.UnusedSince.IsZero() {
		where = append(where, "last_used_at < "+arg(q.UnusedSince.UTC()))
	}
	if after != nil {
		where = append(where, fmt.Sprintf("(last_used_at, digest, owner_user, owner_workflow, owner_session) > (%s, %s, %s, %s, %s)",
			arg(after.used), arg(after.digest), arg(after.owner.User), arg(after.owner.Workflow), arg(after.owner.Session)))
	}
	sql := `SELECT ` + recordColumns + ` FROM hybridctx_records`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += ` ORDER BY last_used_at, digest, owner_user, owner_workflow, owner_session LIMIT ` + arg(listPage)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fail(ctx, "list records", err)
	}
	defer rows.Close()
	var out []artifact.Record
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return nil, fail(ctx, "list records", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, "list records", err)
	}
	return out, nil
}

// scanner is the part of pgx.Rows that scanRecord needs.
type scanner interface{ Scan(dest ...any) error }

func scanRecord(row scanner) (artifact.Record, error) {
	var rec artifact.Record
	var digest []byte
	err := row.Scan(&rec.Owner.User, &rec.Owner.Workflow, &rec.Owner.Session, &digest, &rec.Size,
		&rec.Kind, &rec.Tool, &rec.CallID, &rec.Description, &rec.CreatedAt, &rec.LastUsedAt)
	if err != nil {
		return rec, err
	}
	if len(digest) != 32 {
		return rec, fmt.Errorf("stored digest of %d bytes", len(digest))
	}
	rec.Ref = artifact.RefFromSum([32]byte(digest))
	rec.CreatedAt, rec.LastUsedAt = rec.CreatedAt.UTC(), rec.LastUsedAt.UTC()
	return rec, nil
}
