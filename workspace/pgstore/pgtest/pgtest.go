// Package pgtest gives tests an isolated PostgreSQL schema on the real
// server named by the HYBRIDCTX_TEST_POSTGRES environment variable (which
// .ci/services.sh exports). Without the variable a test is skipped, except
// under CI=true, where it fails: in CI the servers always run.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the server: postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=disable.
const EnvURL = "HYBRIDCTX_TEST_POSTGRES"

// ServerURL returns the server's URL, skipping t (failing it under CI=true)
// when EnvURL is unset.
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is unset under CI=true: .ci/run must start PostgreSQL (.ci/services.sh)", EnvURL)
		}
		t.Skipf("%s is unset: no PostgreSQL server to test against (see .ci/services.sh)", EnvURL)
	}
	return u
}

// NewSchema creates a schema with a random name, drops it (and the large
// objects of its unfinished uploads) when t ends, and returns a URL whose
// search_path selects it.
func NewSchema(t testing.TB) string {
	t.Helper()
	base := ServerURL(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "hx_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() { dropSchema(t, base, name) })
	return WithSchema(t, base, name)
}

// WithSchema returns base with its search_path set to schema.
func WithSchema(t testing.TB, base, schema string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: %s is not a URL", EnvURL)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func dropSchema(t testing.TB, base, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Errorf("pgtest: connect to drop %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	var exists bool
	_ = conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, name+".hybridctx_uploads").Scan(&exists)
	if exists {
		if _, err := conn.Exec(ctx, `SELECT lo_unlink(u.loid) FROM `+name+`.hybridctx_uploads u
			JOIN pg_largeobject_metadata m ON m.oid = u.loid`); err != nil {
			t.Errorf("pgtest: unlink uploads of %s: %v", name, err)
		}
	}
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", name, err)
	}
}

// Exec runs one statement on the database and schema of schemaURL, failing
// t on error.
func Exec(t testing.TB, schemaURL, sql string, args ...any) {
	t.Helper()
	if err := TryExec(schemaURL, sql, args...); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// TryExec runs one statement on the database and schema of schemaURL and
// returns its error.
func TryExec(schemaURL, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// Tamper overwrites the stored body of key (64 hex digits) with data,
// bypassing the CHECK constraint that would refuse it: in one transaction
// it drops the constraint, rewrites the row and adds the constraint back as
// NOT VALID (checked for new rows, not for this one). It fails t unless
// exactly one row changed.
func Tamper(t testing.TB, schemaURL, key string, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatalf("pgtest: tamper: %v", err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatalf("pgtest: tamper: %v", err)
	}
	defer tx.Rollback(ctx)
	digest, err := hex.DecodeString(key)
	if err != nil {
		t.Fatalf("pgtest: tamper: key: %v", err)
	}
	if data == nil {
		data = []byte{}
	}
	if _, err := tx.Exec(ctx, `ALTER TABLE hybridctx_bodies DROP CONSTRAINT hybridctx_bodies_match`); err != nil {
		t.Fatalf("pgtest: tamper: %v", err)
	}
	tag, err := tx.Exec(ctx, `UPDATE hybridctx_bodies SET body = $2, size = $3 WHERE digest = $1`, digest, data, len(data))
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("pgtest: tamper %s: %d rows, %v", key[:12], tag.RowsAffected(), err)
	}
	if _, err := tx.Exec(ctx, `ALTER TABLE hybridctx_bodies ADD CONSTRAINT hybridctx_bodies_match
		CHECK (sha256(body) = digest AND octet_length(body) = size) NOT VALID`); err != nil {
		t.Fatalf("pgtest: tamper: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("pgtest: tamper: %v", err)
	}
}
