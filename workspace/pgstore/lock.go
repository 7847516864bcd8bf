package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hybridctx/hybridctx/workspace/internal/keylock"
)

// unlockTimeout bounds the release of an advisory lock.
const unlockTimeout = 10 * time.Second

// Lock takes a PostgreSQL session advisory lock on a hash of the schema and
// key, so that it excludes every process on every machine sharing the
// database. It waits (polling pg_try_advisory_lock) until the lock is free or
// ctx is done. A held lock keeps one connection of a pool of its own, apart
// from the pool the Store works with, so a holder can still use the Store
// and holders never starve it; if the holder dies, the server ends its
// session and releases the lock. The returned unlock releases it; calling
// it again is a no-op.
func (s *Store) Lock(ctx context.Context, key string) (unlock func() error, err error) {
	defer markErr(&err)
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if _, err := decodeKey(key); err != nil {
		return nil, err
	}
	id := lockID(s.schema, key)
	var wait keylock.Backoff // between attempts, holding no connection
	defer wait.Stop()
	for {
		conn, err := s.locks.Acquire(ctx)
		if err != nil {
			return nil, fail(ctx, "lock", err)
		}
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&got); err != nil {
			discard(conn)
			return nil, fail(ctx, "lock", err)
		}
		if got {
			s.held.Add(1)
			return s.unlocker(conn, id), nil
		}
		conn.Release()
		if err := wait.Wait(ctx); err != nil {
			return nil, fmt.Errorf("pgstore: lock: %w", err)
		}
	}
}

// unlocker releases the advisory lock id held on conn, then gives conn back
// to its pool; a connection whose unlock fails is closed instead, which ends
// its session and so releases the lock.
func (s *Store) unlocker(conn *pgxpool.Conn, id int64) func() error {
	var once sync.Once
	var uerr error
	return func() error {
		once.Do(func() {
			defer s.held.Add(-1)
			ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
			defer cancel()
			var released bool
			err := conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, id).Scan(&released)
			if err == nil && !released {
				err = errors.New("lock was not held")
			}
			if err != nil {
				discard(conn)
				uerr = fmt.Errorf("pgstore: unlock: %w", err)
				return
			}
			conn.Release()
		})
		return uerr
	}
}

// discard closes a pooled connection; releasing a closed connection makes the
// pool drop it.
func discard(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	_ = conn.Conn().Close(ctx)
	conn.Release()
}

// lockID maps (schema, key) to the 64-bit key of an advisory lock.
func lockID(schema, key string) int64 {
	h := sha256.Sum256([]byte("hybridctx body lock\x00" + schema + "\x00" + key))
	return int64(binary.BigEndian.Uint64(h[:8]))
}
