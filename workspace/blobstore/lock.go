package blobstore

import (
	"context"
	"sync"
)

// localLocker is a per-key mutual exclusion within one process, used when
// no cross-process Locker was given.
type localLocker struct {
	mu    sync.Mutex
	locks map[string]chan struct{} // closed when the holder unlocks
}

func newLocalLocker() *localLocker { return &localLocker{locks: map[string]chan struct{}{}} }

// Lock waits until key is free or ctx is done.
func (l *localLocker) Lock(ctx context.Context, key string) (func() error, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l.mu.Lock()
		held, busy := l.locks[key]
		if !busy {
			mine := make(chan struct{})
			l.locks[key] = mine
			l.mu.Unlock()
			var once sync.Once
			return func() error {
				once.Do(func() {
					l.mu.Lock()
					delete(l.locks, key)
					l.mu.Unlock()
					close(mine)
				})
				return nil
			}, nil
		}
		l.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
