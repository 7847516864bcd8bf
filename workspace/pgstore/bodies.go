package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/internal/writerstate"
)

// cleanupTimeout bounds the removal of an aborted upload, which runs even
// when the writer's context is done.
const cleanupTimeout = 30 * time.Second

// listPage is how many bodies or records one List query fetches (a
// variable so that tests can exercise paging).
var listPage = 500

var errEnded = errors.New("pgstore: writer already ended")

// NewWriter starts a body. Writes stay in memory up to 1 MiB; beyond that
// they stream into a large object, using ctx.
func (s *Store) NewWriter(ctx context.Context) (_ driver.Writer, retErr error) {
	defer markErr(&retErr)
	if err := s.checkBodies(ctx); err != nil {
		return nil, err
	}
	return &writer{s: s, ctx: ctx}, nil
}

// writer is one body being written.
type writer struct {
	s       *Store
	ctx     context.Context
	buf     []byte // bytes not yet in the large object
	loid    uint32 // the upload's large object; 0 until the first flush
	flushed int64  // bytes in the large object
	writerstate.State
}

func (w *writer) Write(p []byte) (_ int, retErr error) {
	defer markErr(&retErr)
	if err := w.Check(errEnded); err != nil {
		return 0, err
	}
	if err := w.Admit(len(p), w.s.maxBody, "pgstore: a body in PostgreSQL"); err != nil {
		return 0, err
	}
	written := 0
	for len(p) > 0 {
		if len(w.buf) == chunkBytes {
			if err := w.flush(w.ctx); err != nil {
				w.Err = err
				return written, err
			}
		}
		k := min(chunkBytes-len(w.buf), len(p))
		if w.buf == nil {
			w.buf = make([]byte, 0, min(chunkBytes, max(len(p), 4096)))
		}
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		written += k
		w.N += int64(k)
	}
	return written, nil
}

// flush appends the buffer to the upload's large object, creating it first.
func (w *writer) flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.loid == 0 {
		err := w.s.pool.QueryRow(ctx,
			`INSERT INTO hybridctx_uploads (loid) VALUES (lo_create(0)) RETURNING loid`).Scan(&w.loid)
		if err != nil {
			return fail(ctx, "start upload", err)
		}
	}
	if _, err := w.s.pool.Exec(ctx, `SELECT lo_put($1, $2, $3)`, w.loid, w.flushed, w.buf); err != nil {
		return fail(ctx, "upload", err)
	}
	w.flushed += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// Statements that commit a body, from the writer's memory ($3 bytea) or
// from its large object ($3 oid). The create-only forms skip the server-side
// read of the large object when the body is already there; ON CONFLICT
// still decides a race.
const (
	insertBytes = `INSERT INTO hybridctx_bodies (digest, size, body) VALUES ($1, $2, $3)`
	insertLO    = `INSERT INTO hybridctx_bodies (digest, size, body) SELECT $1, $2, lo_get($3)`
	notThere    = ` WHERE NOT EXISTS (SELECT 1 FROM hybridctx_bodies WHERE digest = $1)`
	createOnly  = ` ON CONFLICT (digest) DO NOTHING`
	// replaceBad rewrites a row only if its stored bytes do not match its
	// digest: a row that matches already holds exactly the bytes a
	// replace would write, so it is left alone (and its readers with it).
	replaceBad = ` ON CONFLICT (digest) DO UPDATE SET size = EXCLUDED.size, body = EXCLUDED.body,
		version = nextval('hybridctx_body_version'), created_at = now()
		WHERE sha256(hybridctx_bodies.body) <> hybridctx_bodies.digest
		   OR octet_length(hybridctx_bodies.body) <> hybridctx_bodies.size`
)

// Commit stores the written bytes under key in one transaction; the CHECK
// constraint refuses them unless they hash to key.
func (w *writer) Commit(ctx context.Context, key string, replace bool) (retErr error) {
	defer markErr(&retErr)
	if err := w.s.checkBodies(ctx); err != nil {
		return err
	}
	if err := w.Check(errEnded); err != nil {
		return err
	}
	digest, err := decodeKey(key)
	if err != nil {
		return err
	}
	if w.loid != 0 && len(w.buf) > 0 {
		if err := w.flush(ctx); err != nil {
			w.Err = err
			return err
		}
	}
	tx, err := w.s.pool.Begin(ctx)
	if err != nil {
		return fail(ctx, "commit", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var sql string
	var src any
	switch {
	case w.loid == 0 && replace:
		sql, src = insertBytes+replaceBad, w.buf
	case w.loid == 0:
		sql, src = insertBytes+createOnly, w.buf
	case replace:
		sql, src = insertLO+replaceBad, w.loid
	default:
		sql, src = insertLO+notThere+createOnly, w.loid
	}
	if w.loid == 0 && w.buf == nil {
		src = []byte{}
	}
	tag, err := tx.Exec(ctx, sql, digest, w.N, src)
	switch {
	case pgCode(err) == codeCheck:
		return fmt.Errorf("pgstore: commit %s: %w", key[:12], ErrRefused)
	case err != nil:
		return fail(ctx, "commit", err)
	case tag.RowsAffected() == 0 && !replace:
		return fmt.Errorf("pgstore: commit %s: %w", key[:12], fs.ErrExist)
	}
	if w.loid != 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM hybridctx_uploads WHERE loid = $1`, w.loid); err != nil {
			return fail(ctx, "commit", err)
		}
		if _, err := tx.Exec(ctx, `SELECT lo_unlink($1)`, w.loid); err != nil {
			return fail(ctx, "commit", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fail(ctx, "commit", err)
	}
	w.Done, w.buf, w.loid = true, nil, 0
	return nil
}

// Abort discards the written bytes, removing the upload's large object even
// when the writer's context is done.
func (w *writer) Abort() (retErr error) {
	defer markErr(&retErr)
	if w.Done {
		return nil
	}
	w.Done, w.buf = true, nil
	if w.loid == 0 || w.s.closed.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), cleanupTimeout)
	defer cancel()
	_, err := w.s.pool.Exec(ctx, `WITH gone AS (DELETE FROM hybridctx_uploads WHERE loid = $1 RETURNING loid)
		SELECT lo_unlink(loid) FROM gone`, w.loid)
	w.loid = 0
	return fail(ctx, "abort upload", err)
}

// Stat describes a body from its row, without reading the body.
func (s *Store) Stat(ctx context.Context, key string) (_ driver.Info, retErr error) {
	defer markErr(&retErr)
	if err := s.checkBodies(ctx); err != nil {
		return driver.Info{}, err
	}
	digest, err := decodeKey(key)
	if err != nil {
		return driver.Info{}, err
	}
	info := driver.Info{Key: key}
	var version int64
	err = s.pool.QueryRow(ctx, `SELECT size, version, created_at FROM hybridctx_bodies WHERE digest = $1`, digest).
		Scan(&info.Size, &version, &info.ModTime)
	if err != nil {
		return driver.Info{}, notFound(ctx, "stat", key, err)
	}
	info.Version = strconv.FormatInt(version, 10)
	info.ModTime = info.ModTime.UTC()
	return info, nil
}

// notFound maps "no rows" to fs.ErrNotExist.
func notFound(ctx context.Context, op, key string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("pgstore: %s %s: %w", op, key[:12], fs.ErrNotExist)
	}
	return fail(ctx, op, err)
}

// Delete removes a body. A body that records still point at is refused with
// ErrBodyInUse.
func (s *Store) Delete(ctx context.Context, key string) (retErr error) {
	defer markErr(&retErr)
	if err := s.checkBodies(ctx); err != nil {
		return err
	}
	digest, err := decodeKey(key)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM hybridctx_bodies WHERE digest = $1`, digest)
	switch {
	case pgCode(err) == codeForeignKey:
		return fmt.Errorf("pgstore: delete %s: %w", key[:12], ErrBodyInUse)
	case err != nil:
		return fail(ctx, "delete", err)
	case tag.RowsAffected() == 0:
		return fmt.Errorf("pgstore: delete %s: %w", key[:12], fs.ErrNotExist)
	}
	return nil
}

// List yields every body in digest order, fetching a page at a time so that
// no connection is held while the caller works.
func (s *Store) List(ctx context.Context) iter.Seq2[driver.Info, error] {
	return paged(func() error { return s.checkBodies(ctx) }, []byte{}, func(after []byte) ([]driver.Info, error) {
		return s.bodyPage(ctx, after)
	}, func(last driver.Info) []byte {
		after, _ := decodeKey(last.Key)
		return after
	})
}

// paged yields the items of the pages page fetches, the first after start
// and each next one after the cursor next gives for the last item of the
// page before, until a page shorter than listPage. The error of check,
// run first, is yielded alone: the listing could not start.
func paged[T, C any](check func() error, start C, page func(after C) ([]T, error), next func(last T) C) iter.Seq2[T, error] {
	return markSeq(func(yield func(T, error) bool) {
		var zero T
		if err := check(); err != nil {
			yield(zero, err)
			return
		}
		for after := start; ; {
			items, err := page(after)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if len(items) < listPage {
				return
			}
			after = next(items[len(items)-1])
		}
	})
}

func (s *Store) bodyPage(ctx context.Context, after []byte) ([]driver.Info, error) {
	rows, err := s.pool.Query(ctx, `SELECT digest, size, version, created_at FROM hybridctx_bodies
		WHERE digest > $1 ORDER BY digest LIMIT $2`, after, listPage)
	if err != nil {
		return nil, fail(ctx, "list", err)
	}
	defer rows.Close()
	var out []driver.Info
	for rows.Next() {
		var digest []byte
		var version int64
		var info driver.Info
		if err := rows.Scan(&digest, &info.Size, &version, &info.ModTime); err != nil {
			return nil, fail(ctx, "list", err)
		}
		info.Key, info.Version, info.ModTime = encodeKey(digest), strconv.FormatInt(version, 10), info.ModTime.UTC()
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, "list", err)
	}
	return out, nil
}

// Open opens a body for reading. Its first slice comes in the same
// statement as its size and version, so a body of up to 1 MiB is read as
// one consistent snapshot; the reader fetches later 1 MiB slices with ctx
// and fails with driver.ErrChanged if the body is replaced in between.
// It also reads at offsets (driver.RangeReader) and restats
// (driver.Restatter).
func (s *Store) Open(ctx context.Context, key string) (_ driver.Reader, retErr error) {
	defer markErr(&retErr)
	if err := s.checkBodies(ctx); err != nil {
		return nil, err
	}
	digest, err := decodeKey(key)
	if err != nil {
		return nil, err
	}
	r := &reader{s: s, ctx: ctx, digest: digest, info: driver.Info{Key: key}}
	var version int64
	err = s.pool.QueryRow(ctx, `SELECT size, version, created_at, substring(body FROM 1 FOR $2)
		FROM hybridctx_bodies WHERE digest = $1`, digest, chunkBytes).
		Scan(&r.info.Size, &version, &r.info.ModTime, &r.buf)
	if err != nil {
		return nil, notFound(ctx, "open", key, err)
	}
	r.info.Version, r.info.ModTime = strconv.FormatInt(version, 10), r.info.ModTime.UTC()
	r.pos = int64(len(r.buf))
	return r, nil
}

// reader reads one body a slice at a time.
type reader struct {
	s      *Store
	ctx    context.Context
	digest []byte
	info   driver.Info
	buf    []byte // fetched, not yet returned
	pos    int64  // offset of the next byte Read returns after buf
	closed bool
}

func (r *reader) Info() driver.Info { return r.info }

func (r *reader) Close() error {
	r.closed, r.buf = true, nil
	return nil
}

func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, fs.ErrClosed
	}
	if len(r.buf) == 0 {
		if r.pos >= r.info.Size {
			return 0, io.EOF
		}
		want := min(int64(chunkBytes), r.info.Size-r.pos)
		if int64(len(p)) >= want {
			n, err := r.fetch(p[:want], r.pos)
			r.pos += int64(n)
			return n, err
		}
		if cap(r.buf) < int(want) {
			r.buf = make([]byte, want)
		}
		n, err := r.fetch(r.buf[:want], r.pos)
		r.buf = r.buf[:n]
		r.pos += int64(n)
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// ReadAt reads len(p) bytes at off, or fewer and io.EOF at the end.
func (r *reader) ReadAt(p []byte, off int64) (int, error) {
	if r.closed {
		return 0, fs.ErrClosed
	}
	if off < 0 {
		return 0, fs.ErrInvalid
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= r.info.Size {
			return n, io.EOF
		}
		k := int(min(int64(len(p)-n), int64(chunkBytes), r.info.Size-at))
		m, err := r.fetch(p[n:n+k], at)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// fetch fills dst from the body at off, checking that the body is the
// version this reader opened.
func (r *reader) fetch(dst []byte, off int64) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	rows, err := r.s.pool.Query(r.ctx, `SELECT version, substring(body FROM $2 FOR $3) FROM hybridctx_bodies WHERE digest = $1`,
		r.digest, off+1, len(dst))
	if err != nil {
		return 0, fail(r.ctx, "read", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, fail(r.ctx, "read", err)
		}
		return 0, fmt.Errorf("pgstore: read: body deleted while read: %w", driver.ErrChanged)
	}
	var version int64
	var b pgtype.DriverBytes
	if err := rows.Scan(&version, &b); err != nil {
		return 0, fail(r.ctx, "read", err)
	}
	if strconv.FormatInt(version, 10) != r.info.Version {
		return 0, fmt.Errorf("pgstore: read: %w", driver.ErrChanged)
	}
	n := copy(dst, b)
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fail(r.ctx, "read", err)
	}
	if n < len(dst) {
		return n, io.ErrUnexpectedEOF
	}
	return n, nil
}

// Restat describes the body again, for callers that check it did not change.
func (r *reader) Restat() (_ driver.Info, retErr error) {
	defer markErr(&retErr)
	return r.s.Stat(r.ctx, r.info.Key)
}
