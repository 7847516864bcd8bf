package pgstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hybridctx/hybridctx/workspace/driver"
)

// What garbage collection trusts here. With bodies in PostgreSQL, deleting
// a body row fires the foreign key of hybridctx_records (ON DELETE
// RESTRICT), which looks for a referencing record in the same transaction:
// a body with records cannot be deleted whatever the caller believed. That
// lookup, like the Store's per-body record queries, goes through the
// hybridctx_records_by_digest index, so a damaged index could still mislead
// both; PostgreSQL's checksums and its amcheck extension are how such damage
// is found. CheckIntegrity runs amcheck when it is installed, and
// ScanReferences reads the records table without any index, which the
// workspace uses to confirm every garbage-collection candidate.

// CheckIntegrity verifies every B-tree index of the workspace's tables with
// PostgreSQL's amcheck extension (bt_index_check with heapallindexed, which
// also proves that each table row has its index entry), and reports each
// damaged index. It implements driver.IntegrityChecker. Without amcheck on
// the connection's search path (CREATE EXTENSION amcheck, by a superuser)
// it returns an error wrapping errors.ErrUnsupported: the check is skipped,
// not passed.
func (s *Store) CheckIntegrity(ctx context.Context) (_ []driver.Damage, retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var have bool
	err := s.pool.QueryRow(ctx, `SELECT to_regprocedure('bt_index_check(regclass, boolean)') IS NOT NULL`).Scan(&have)
	if err != nil {
		return nil, fail(ctx, "integrity check", err)
	}
	if !have {
		return nil, fmt.Errorf("pgstore: integrity check needs the amcheck extension: %w", errors.ErrUnsupported)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT c.oid::bigint, c.relname
		FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_class t ON t.oid = i.indrelid
		JOIN pg_am a ON a.oid = c.relam
		WHERE t.relnamespace = current_schema()::regnamespace
		  AND t.relname IN ('hybridctx_records', 'hybridctx_bodies')
		  AND a.amname = 'btree'
		ORDER BY c.relname`)
	if err != nil {
		return nil, fail(ctx, "integrity check", err)
	}
	type index struct {
		oid  int64
		name string
	}
	indexes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (index, error) {
		var ix index
		return ix, r.Scan(&ix.oid, &ix.name)
	})
	if err != nil {
		return nil, fail(ctx, "integrity check", err)
	}
	var damage []driver.Damage
	for _, ix := range indexes {
		_, err := s.pool.Exec(ctx, `SELECT bt_index_check($1::bigint::oid::regclass, true)`, ix.oid)
		switch {
		case err == nil:
		case strings.HasPrefix(pgCode(err), "XX"): // data_corrupted, index_corrupted
			damage = append(damage, driver.Damage{Part: "index " + ix.name, Problem: "PostgreSQL amcheck found the index damaged"})
		default:
			return nil, fail(ctx, "integrity check", err)
		}
	}
	return damage, nil
}

// ScanReferences yields the digest and last-used time of every record,
// reading hybridctx_records itself with index scans turned off for its
// transaction, so that a damaged index cannot hide a record. It implements
// driver.ReferenceScanner.
func (s *Store) ScanReferences(ctx context.Context) iter.Seq2[driver.Reference, error] {
	return markSeq(func(yield func(driver.Reference, error) bool) {
		if err := s.check(ctx); err != nil {
			yield(driver.Reference{}, err)
			return
		}
		tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
		if err != nil {
			yield(driver.Reference{}, fail(ctx, "scan records", err))
			return
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		for _, off := range []string{"enable_indexscan", "enable_indexonlyscan", "enable_bitmapscan"} {
			if _, err := tx.Exec(ctx, "SET LOCAL "+off+" = off"); err != nil {
				yield(driver.Reference{}, fail(ctx, "scan records", err))
				return
			}
		}
		rows, err := tx.Query(ctx, `SELECT digest, last_used_at FROM hybridctx_records`)
		if err != nil {
			yield(driver.Reference{}, fail(ctx, "scan records", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var digest []byte
			var used time.Time
			if err := rows.Scan(&digest, &used); err != nil {
				yield(driver.Reference{}, fail(ctx, "scan records", err))
				return
			}
			if !yield(driver.Reference{Key: fmt.Sprintf("%x", digest), LastUsedAt: used.UTC()}, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(driver.Reference{}, fail(ctx, "scan records", err))
		}
	})
}
