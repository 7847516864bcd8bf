// Package pgstore is the PostgreSQL workspace backend: records, and bodies
// too unless they live in object storage, in one database shared by every
// worker on every machine. One *Store implements driver.Bodies,
// driver.Records, driver.Locker, driver.IntegrityChecker (with the amcheck
// extension), driver.ReferenceScanner and io.Closer.
//
// # Tables
//
// Open creates and migrates its tables itself, in the first schema of the
// connection's search_path (a URL may name one with ?search_path=NAME). The
// migration is versioned (hybridctx_meta.schema_version), idempotent, and
// runs under a transaction-scoped advisory lock, so any number of workers may
// start at once.
//
//	hybridctx_bodies   digest bytea primary key, size, body bytea, version;
//	                   CHECK (sha256(body) = digest AND octet_length(body) = size):
//	                   the database itself refuses a body that does not
//	                   match its digest
//	hybridctx_records  one row per (owner, digest); with bodies in PostgreSQL
//	                   a foreign key to hybridctx_bodies, so a body that
//	                   still has records cannot be deleted
//	hybridctx_uploads  large objects holding bodies still being written
//	hybridctx_meta     schema version and where bodies live
//
// A database is set up for one body mode on its first Open (BodiesHere or
// BodiesElsewhere) and refuses the other afterwards.
//
// # Size limit and streaming
//
// Bodies are kept in one bytea value, which PostgreSQL caps at 1 GB; this
// backend stores at most Options.MaxBodyBytes, 256 MiB by default (at most
// MaxBodyLimit), and a larger body fails its Write with an error wrapping
// driver.ErrTooLarge. Nothing is buffered whole on the client: a writer
// holds at most 1 MiB, streams the rest into a large object chunk by chunk,
// and Commit turns the large object into the body row inside the server.
// Reads fetch 1 MiB slices (the body column is stored uncompressed so a
// slice reads only its own pages). Open writers and readers hold no
// connection between calls, so they never exhaust the pool; a held Lock keeps
// one connection of a second pool of the same size.
//
// Writers that die before Commit or Abort leave large objects behind;
// SweepUploads removes those older than a given age (package backend runs it
// on every Open with DefaultUploadMaxAge).
//
// # Errors
//
// An absent body or record wraps fs.ErrNotExist, a create-only Commit over
// an existing body wraps fs.ErrExist, and a key that is not 64 lowercase hex
// digits wraps fs.ErrInvalid. Open's errors wrap driver.ErrUnavailable, ErrSchema
// or ErrInvalidURL and never contain the password. Every method checks its
// context first; a writer's and a reader's I/O uses the context given to
// NewWriter and Open.
package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hybridctx/hybridctx/artifact"
)

// BodyMode says where a workspace keeps its bodies.
type BodyMode uint8

const (
	// BodiesHere keeps bodies in PostgreSQL (the postgres:// backend).
	BodiesHere BodyMode = iota
	// BodiesElsewhere makes the database a record index for bodies kept
	// in object storage; the Store's Bodies methods then fail with
	// ErrNoBodies.
	BodiesElsewhere
)

func (m BodyMode) String() string {
	if m == BodiesElsewhere {
		return "external"
	}
	return "postgres"
}

// Size limits of bodies stored in PostgreSQL.
const (
	// DefaultMaxBodyBytes is the largest body stored when
	// Options.MaxBodyBytes is zero.
	DefaultMaxBodyBytes int64 = 256 << 20
	// MaxBodyLimit is the largest Options.MaxBodyBytes accepted, well
	// below PostgreSQL's 1 GB bytea limit.
	MaxBodyLimit int64 = 512 << 20
	// DefaultUploadMaxAge is the age past which SweepUploads is meant to
	// remove unfinished uploads.
	DefaultUploadMaxAge = 24 * time.Hour
	// chunkBytes is the unit of streaming in both directions.
	chunkBytes = 1 << 20
	// defaultConnectTimeout bounds a connection attempt when the URL sets
	// no connect_timeout.
	defaultConnectTimeout = 15 * time.Second
)

var (
	// ErrSchema means the database holds a schema this build cannot use:
	// a newer version, the other body mode, or no schema to create in. It
	// is in the portable category driver.ErrIncompatible.
	ErrSchema = driver.Wrap(driver.ErrIncompatible, errors.New("PostgreSQL workspace schema cannot be used"))
	// ErrInvalidURL means the connection string could not be parsed.
	ErrInvalidURL = errors.New("invalid PostgreSQL URL")
	// ErrBodyInUse means a body cannot be deleted while records point at it.
	ErrBodyInUse = errors.New("body still has records")
	// ErrNoBodies means the Store is a record index whose bodies live
	// elsewhere.
	ErrNoBodies = errors.New("this PostgreSQL workspace keeps no bodies")
	// ErrRefused means the database refused a body whose bytes do not
	// match the key it was committed under.
	ErrRefused = errors.New("PostgreSQL refused a body that does not match its digest and size")
	// ErrClosed means the Store was closed.
	ErrClosed = errors.New("PostgreSQL workspace is closed")
)

// Options tune Open. nil means defaults.
type Options struct {
	// Bodies says where bodies live; the zero value is BodiesHere.
	Bodies BodyMode
	// MaxBodyBytes bounds a stored body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

// Store is a workspace in one PostgreSQL database (and schema). It is safe
// for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	locks   *pgxpool.Pool // connections that hold advisory locks
	mode    BodyMode
	maxBody int64
	schema  string
	target  string
	closed  atomic.Bool
	held    atomic.Int64 // locks held
}

// Open connects to the database named by connString (a postgres:// URL or
// key=value string, as pgx accepts, including pool_max_conns), checks that
// it answers, and creates or migrates the tables.
func Open(ctx context.Context, connString string, opts *Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxBodyBytes < 0 || o.MaxBodyBytes > MaxBodyLimit {
		return nil, fmt.Errorf("pgstore: MaxBodyBytes %d outside 1..%d", o.MaxBodyBytes, MaxBodyLimit)
	}
	if o.Bodies != BodiesHere && o.Bodies != BodiesElsewhere {
		return nil, fmt.Errorf("pgstore: unknown body mode %d", o.Bodies)
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidURL, redact(err.Error(), passwordIn(connString)))
	}
	if cfg.MaxConns < 2 {
		cfg.MaxConns = 2 // a repair holds one connection while it verifies on another
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	password := cfg.ConnConfig.Password
	s := &Store{
		mode:    o.Bodies,
		maxBody: o.MaxBodyBytes,
		target:  describe(cfg.ConnConfig),
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.openErr("cannot connect", err, password)
	}
	s.pool = pool
	// The lock pool connects lazily, on the first Lock.
	if s.locks, err = pgxpool.NewWithConfig(ctx, cfg.Copy()); err != nil {
		pool.Close()
		return nil, s.openErr("cannot connect", err, password)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		s.closePools()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("open %s: %w", s.target, ctx.Err())
		}
		return nil, s.openErr("cannot connect", err, password)
	}
	err = s.migrate(ctx, conn.Conn())
	conn.Release()
	if err != nil {
		s.closePools()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("open %s: %w", s.target, ctx.Err())
		}
		if errors.Is(err, ErrSchema) {
			return nil, fmt.Errorf("%s: %w", s.target, err)
		}
		return nil, s.openErr("cannot set up the tables", err, password)
	}
	return s, nil
}

// Close closes the connection pools. It is safe to call more than once;
// locks still held are released when their connections close.
func (s *Store) Close() (retErr error) {
	defer markErr(&retErr)
	if s.closed.CompareAndSwap(false, true) {
		s.closePools()
	}
	return nil
}

// closePools closes both pools. The lock pool waits for held locks to be
// released, so it is closed in the background while any is held.
func (s *Store) closePools() {
	s.pool.Close()
	if s.held.Load() > 0 {
		go s.locks.Close()
		return
	}
	s.locks.Close()
}

// Mode reports where this workspace keeps its bodies.
func (s *Store) Mode() BodyMode { return s.mode }

// String names the database without credentials, as user@host:port/db.
func (s *Store) String() string { return s.target }

// check runs at the start of every method.
func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// checkBodies is check for the Bodies methods.
func (s *Store) checkBodies(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if s.mode != BodiesHere {
		return ErrNoBodies
	}
	return nil
}

// describe names a database without its password.
func describe(c *pgx.ConnConfig) string {
	return fmt.Sprintf("postgres://%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// errUnavailable is the text of Open's errors for a database that could
// not be reached or refused the connection (wrong address, credentials or
// database name); they are in the portable category driver.ErrUnavailable.
var errUnavailable = errors.New("PostgreSQL workspace not available")

// openErr is Open's error for a database that could not be reached or set
// up, with the server's words (password redacted) but not its error
// values, which may hold the connection string. It is in err's category
// when err has one (a refused privilege is driver.ErrPermission), else in
// driver.ErrUnavailable.
func (s *Store) openErr(what string, err error, password string) error {
	cat := driver.Category(classify(err))
	if cat == nil {
		cat = driver.ErrUnavailable
	}
	return driver.Wrap(cat, fmt.Errorf("%w: %s: %s: %s", errUnavailable, s.target, what, redact(causeText(err), password)))
}

// causeText is err's message on one line, preferring the server's own words.
func causeText(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message + " (SQLSTATE " + pe.Code + ")"
	}
	msg := err.Error()
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) && ce.Unwrap() != nil {
		msg = ce.Unwrap().Error()
	}
	return strings.Join(strings.Fields(msg), " ")
}

// redact removes every occurrence of password from msg.
func redact(msg, password string) string {
	if password == "" {
		return msg
	}
	return strings.ReplaceAll(msg, password, "xxxxx")
}

// passwordIn extracts a password from a connection string that pgx could not
// parse, so that it can be redacted from the parser's message anyway.
func passwordIn(connString string) string {
	if i := strings.Index(connString, "://"); i >= 0 {
		rest := connString[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if c := strings.Index(rest[:at], ":"); c >= 0 {
				return rest[c+1 : at]
			}
		}
		return ""
	}
	if i := strings.Index(connString, "password="); i >= 0 {
		return strings.Fields(connString[i+len("password="):] + " ")[0]
	}
	return ""
}

// pgCode returns err's SQLSTATE, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// SQLSTATE codes the Store maps.
const (
	codeForeignKey = "23503"
	codeCheck      = "23514"
)

// fail wraps a storage error, preferring ctx's error when ctx is done, so
// that callers can test errors.Is(err, context.Canceled).
func fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("pgstore: %s: %w (%v)", op, cerr, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// decodeKey checks that key is 64 lowercase hex digits and returns the
// digest bytes.
func decodeKey(key string) ([]byte, error) {
	ref, err := artifact.ParseDigest(key)
	if err != nil {
		return nil, fmt.Errorf("pgstore: key is not 64 lowercase hex digits (%d bytes): %w", len(key), fs.ErrInvalid)
	}
	sum := ref.Sum()
	return sum[:], nil
}

func encodeKey(d []byte) string { return hex.EncodeToString(d) }
