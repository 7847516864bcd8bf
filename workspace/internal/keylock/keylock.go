// Package keylock is a per-key mutual exclusion within one process: the
// driver.Locker of the memory backend, the lock of a bucket workspace that
// was given no shared one, and drivertest's for a backend without its own.
package keylock

import (
	"context"
	"sync"
)

// Locks holds one lock per key. The zero value is ready to use; a Locks
// must not be copied after first use.
type Locks struct {
	mu   sync.Mutex
	held map[string]chan struct{} // closed when the holder unlocks
}

// Lock waits until key is free or ctx is done, and takes it. The returned
// unlock releases it; calling it again is a no-op.
func (l *Locks) Lock(ctx context.Context, key string) (unlock func() error, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l.mu.Lock()
		busy, ok := l.held[key]
		if !ok {
			if l.held == nil {
				l.held = map[string]chan struct{}{}
			}
			mine := make(chan struct{})
			l.held[key] = mine
			l.mu.Unlock()
			var once sync.Once
			return func() error {
				once.Do(func() {
					l.mu.Lock()
					delete(l.held, key)
					l.mu.Unlock()
					close(mine)
				})
				return nil
			}, nil
		}
		l.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
