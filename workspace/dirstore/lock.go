package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// Lock polling: a first short pause, doubled up to a ceiling, so that a
// waiter notices both a released lock and a cancelled ctx quickly.
const (
	lockPollMin = time.Millisecond
	lockPollMax = 20 * time.Millisecond
)

// Lock takes an exclusive lock on key that holds across every process
// sharing the workspace: a flock(2) on locks/<key>. It waits until the lock
// is free or ctx is done. The returned unlock releases it; calling it again
// is a no-op.
func (s *Store) Lock(ctx context.Context, key string) (unlock func() error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	f, err := s.root.OpenFile(lockDir+"/"+key, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("dirstore: open lock: %w", err)
	}
	if err := flockWait(ctx, f); err != nil {
		_ = f.Close()
		return nil, err
	}
	var once sync.Once
	var uerr error
	return func() error {
		once.Do(func() {
			uerr = errors.Join(flock(f, syscall.LOCK_UN), f.Close())
			if uerr != nil {
				uerr = fmt.Errorf("dirstore: unlock: %w", uerr)
			}
		})
		return uerr
	}, nil
}

// flockWait polls a non-blocking exclusive flock until it is granted or ctx
// is done.
func flockWait(ctx context.Context, f *os.File) error {
	pause := lockPollMin
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("dirstore: lock: %w", err)
		}
		if timer == nil {
			timer = time.NewTimer(pause)
		} else {
			timer.Reset(pause)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		pause = min(2*pause, lockPollMax)
	}
}

// flock applies how to f's descriptor, retrying on EINTR.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	cerr := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if ferr != syscall.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return ferr
}

// UnsafePermissions lists the root-relative paths ("." for the root) of
// every object in the workspace whose mode grants any permission to group or
// others: the root, its directories, bodies, records.db with its -wal and
// -shm files, and lock files. A symbolic link is always listed (its mode is
// 0777), since nothing in a workspace should be one.
func (s *Store) UnsafePermissions(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []string
	err := fs.WalkDir(s.root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && name != "." {
				return nil // removed during the walk
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 || fi.Mode()&fs.ModeSymlink != 0 {
			out = append(out, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dirstore: check permissions: %w", err)
	}
	return out, nil
}
