package pgstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the version of the tables this build creates and uses.
const SchemaVersion = 1

// migrateLockClass is the first key of the transaction-scoped advisory lock
// that serializes migrations; the second is a hash of the schema name.
const migrateLockClass = 0x68796278 // "hybx"

// migrations[i] takes the tables from version i to version i+1.
var migrations = [][]string{
	{
		`CREATE SEQUENCE hybridctx_body_version`,
		`CREATE TABLE hybridctx_bodies (
			digest     bytea       PRIMARY KEY CONSTRAINT hybridctx_bodies_digest_len CHECK (octet_length(digest) = 32),
			size       bigint      NOT NULL,
			body       bytea       NOT NULL,
			version    bigint      NOT NULL DEFAULT nextval('hybridctx_body_version'),
			created_at timestamptz NOT NULL DEFAULT now(),
			CONSTRAINT hybridctx_bodies_match CHECK (sha256(body) = digest AND octet_length(body) = size)
		)`,
		// Uncompressed out-of-line storage: a substring reads only its pages.
		`ALTER TABLE hybridctx_bodies ALTER COLUMN body SET STORAGE EXTERNAL`,
		`CREATE TABLE hybridctx_uploads (
			loid       oid         PRIMARY KEY,
			created_at timestamptz NOT NULL DEFAULT now()
		)`,
		`CREATE TABLE hybridctx_records (
			owner_user     text        NOT NULL,
			owner_workflow text        NOT NULL,
			owner_session  text        NOT NULL,
			digest         bytea       NOT NULL CONSTRAINT hybridctx_records_digest_len CHECK (octet_length(digest) = 32),
			size           bigint      NOT NULL CHECK (size >= 0),
			kind           text        NOT NULL,
			tool           text        NOT NULL,
			call_id        text        NOT NULL,
			description    text        NOT NULL,
			created_at     timestamptz NOT NULL,
			last_used_at   timestamptz NOT NULL,
			PRIMARY KEY (owner_user, owner_workflow, owner_session, digest)
		)`,
		`CREATE INDEX hybridctx_records_by_use ON hybridctx_records
			(last_used_at, digest, owner_user, owner_workflow, owner_session)`,
		`CREATE INDEX hybridctx_records_by_digest ON hybridctx_records (digest)`,
	},
}

// bodiesHereDDL runs once, when a database is first set up with BodiesHere.
var bodiesHereDDL = []string{
	`ALTER TABLE hybridctx_records ADD CONSTRAINT hybridctx_records_body
		FOREIGN KEY (digest) REFERENCES hybridctx_bodies (digest) ON DELETE RESTRICT`,
}

// migrate creates or upgrades the tables in one transaction under an
// advisory lock, and records the schema name for lock keys.
func (s *Store) migrate(ctx context.Context, conn *pgx.Conn) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var schema *string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	if schema == nil {
		return fmt.Errorf("%w: no schema to create the tables in (check search_path)", ErrSchema)
	}
	s.schema = *schema
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, int32(migrateLockClass)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS hybridctx_meta (key text PRIMARY KEY, value text NOT NULL)`); err != nil {
		return err
	}
	meta := map[string]string{}
	rows, err := tx.Query(ctx, `SELECT key, value FROM hybridctx_meta`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			rows.Close()
			return err
		}
		meta[k] = v
	}
	if err := rows.Err(); err != nil {
		return err
	}
	version := 0
	if v, ok := meta["schema_version"]; ok {
		if version, err = strconv.Atoi(v); err != nil || version < 0 {
			return fmt.Errorf("%w: unreadable schema version %q", ErrSchema, v)
		}
	}
	if version > SchemaVersion {
		return fmt.Errorf("%w: tables are at version %d, this build knows up to %d", ErrSchema, version, SchemaVersion)
	}
	if m, ok := meta["bodies"]; ok && m != s.mode.String() {
		return fmt.Errorf("%w: this database keeps %s bodies, not %s ones", ErrSchema, m, s.mode)
	}
	if version == SchemaVersion {
		if _, ok := meta["bodies"]; !ok {
			return fmt.Errorf("%w: body mode not recorded", ErrSchema)
		}
		return tx.Commit(ctx)
	}
	for v := version; v < SchemaVersion; v++ {
		for _, stmt := range migrations[v] {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("migrate to version %d: %w", v+1, err)
			}
		}
	}
	if _, ok := meta["bodies"]; !ok {
		if s.mode == BodiesHere {
			for _, stmt := range bodiesHereDDL {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return err
				}
			}
		}
		if err := setMeta(ctx, tx, "bodies", s.mode.String()); err != nil {
			return err
		}
	}
	if err := setMeta(ctx, tx, "schema_version", strconv.Itoa(SchemaVersion)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func setMeta(ctx context.Context, tx pgx.Tx, key, value string) error {
	_, err := tx.Exec(ctx, `INSERT INTO hybridctx_meta (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, key, value)
	return err
}

// SweepUploads removes the large objects of uploads started more than
// olderThan ago and never committed or aborted (their writer died), and
// reports how many it removed.
func (s *Store) SweepUploads(ctx context.Context, olderThan time.Duration) (_ int, retErr error) {
	defer markErr(&retErr)
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	var n int
	err := s.pool.QueryRow(ctx, `WITH gone AS (
			DELETE FROM hybridctx_uploads WHERE created_at < now() - make_interval(secs => $1) RETURNING loid
		) SELECT count(lo_unlink(m.oid)) FROM gone JOIN pg_largeobject_metadata m ON m.oid = gone.loid`,
		olderThan.Seconds()).Scan(&n)
	if err != nil {
		return 0, fail(ctx, "sweep uploads", err)
	}
	return n, nil
}
