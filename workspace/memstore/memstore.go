// Package memstore is the in-memory workspace backend (URL mem://), for
// tests and examples. One *Store implements both driver.Bodies and
// driver.Records; nothing survives the process.
package memstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/internal/keylock"
)

// Store is an in-memory body and record store. The zero value is not ready;
// use New. It is safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	bodies  map[string]*body
	records map[recKey]artifact.Record
	locks   keylock.Locks
	version uint64
	now     func() time.Time
}

type body struct {
	data    *blocks
	modTime time.Time
	version string // the commit's number in decimal
}

// recKey keys a record by owner and raw digest: no hex string per record
// or per lookup.
type recKey struct {
	owner artifact.Owner
	sum   [sha256.Size]byte
}

func keyOf(owner artifact.Owner, ref artifact.Ref) recKey { return recKey{owner, ref.Sum()} }

// The errors of an absent body and of an existing one are the same values
// each time: a miss, the common case of a new body, allocates nothing.
var (
	errNoBody     = driver.Wrap(driver.ErrNotFound, fmt.Errorf("memstore: body: %w", fs.ErrNotExist))
	errBodyExists = driver.Wrap(driver.ErrAlreadyExists, fmt.Errorf("memstore: body: %w", fs.ErrExist))
	errInvalidKey = fmt.Errorf("memstore: invalid key: %w", fs.ErrInvalid)
)

// New returns an empty store.
func New() *Store {
	return &Store{
		bodies:  map[string]*body{},
		records: map[recKey]artifact.Record{},
		now:     time.Now,
	}
}

var (
	_ driver.Bodies  = (*Store)(nil)
	_ driver.Records = (*Store)(nil)
	_ driver.Locker  = (*Store)(nil)
)

// validKey accepts exactly 64 lowercase hex digits (artifact.ValidDigest).
func validKey(key string) error {
	if !artifact.ValidDigest(key) {
		return errInvalidKey
	}
	return nil
}

// NewWriter implements driver.Bodies.
func (s *Store) NewWriter(ctx context.Context) (driver.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &writer{s: s}, nil
}

type writer struct {
	s    *Store
	buf  blocks
	done bool
	body body // what Commit stores: the writer's own, so it costs no allocation
}

func (w *writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, errors.New("memstore: write after end")
	}
	w.buf.write(p)
	return len(p), nil
}

func (w *writer) Commit(ctx context.Context, key string, replace bool) error {
	if w.done {
		return errors.New("memstore: commit after end")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validKey(key); err != nil {
		return err
	}
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.bodies[key]; ok && !replace {
		return errBodyExists
	}
	s.version++
	w.body = body{data: &w.buf, modTime: s.now()}
	w.body.version = strconv.FormatUint(s.version, 10)
	s.bodies[key] = &w.body
	w.done = true // the body keeps w.buf
	return nil
}

func (w *writer) Abort() error {
	if !w.done {
		w.done = true
		w.buf = blocks{}
	}
	return nil
}

func (b *body) info(key string) driver.Info {
	return driver.Info{Key: key, Size: b.data.size, ModTime: b.modTime, Version: b.version}
}

func (s *Store) get(ctx context.Context, key string) (*body, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validKey(key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bodies[key]
	if !ok {
		return nil, errNoBody
	}
	return b, nil
}

// Open implements driver.Bodies. The reader sees the body as committed when
// it was opened; a later replace does not affect it.
func (s *Store) Open(ctx context.Context, key string) (driver.Reader, error) {
	b, err := s.get(ctx, key)
	if err != nil {
		return nil, err
	}
	return &reader{blockReader: blockReader{bs: b.data}, info: b.info(key)}, nil
}

type reader struct {
	blockReader
	info driver.Info
}

func (r *reader) Info() driver.Info { return r.info }
func (r *reader) Close() error      { return nil }

// Stat implements driver.Bodies.
func (s *Store) Stat(ctx context.Context, key string) (driver.Info, error) {
	b, err := s.get(ctx, key)
	if err != nil {
		return driver.Info{}, err
	}
	return b.info(key), nil
}

// Delete implements driver.Bodies.
func (s *Store) Delete(ctx context.Context, key string) error {
	if _, err := s.get(ctx, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.bodies[key]; !ok {
		return errNoBody
	}
	delete(s.bodies, key)
	return nil
}

// List implements driver.Bodies, in key order.
func (s *Store) List(ctx context.Context) iter.Seq2[driver.Info, error] {
	return func(yield func(driver.Info, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(driver.Info{}, err)
			return
		}
		s.mu.Lock()
		infos := make([]driver.Info, 0, len(s.bodies))
		for k, b := range s.bodies {
			infos = append(infos, b.info(k))
		}
		s.mu.Unlock()
		slices.SortFunc(infos, func(a, b driver.Info) int { return cmp.Compare(a.Key, b.Key) })
		for _, in := range infos {
			if !yield(in, nil) {
				return
			}
		}
	}
}

// Lock implements driver.Locker, within this process.
func (s *Store) Lock(ctx context.Context, key string) (func() error, error) {
	return s.locks.Lock(ctx, key)
}

var _ io.ReaderAt = (*reader)(nil)
