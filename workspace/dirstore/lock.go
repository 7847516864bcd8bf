package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
	"github.com/hybridctx/hybridctx/workspace/internal/keylock"
)

// Lock takes an exclusive lock on key that holds across every process
// sharing the workspace: a flock(2) on locks/<key>. It waits until the lock
// is free or ctx is done. The returned unlock releases it; calling it again
// is a no-op.
//
// The lock file exists only while the lock is held: unlock removes its name
// before releasing it, and a waiter that then gets the lock of the removed
// file notices that the name no longer leads to it and starts again.
func (s *Store) Lock(ctx context.Context, key string) (unlock func() error, err error) {
	defer markErr(&err)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	name := lockDir + "/" + key
	var wait keylock.Backoff
	defer wait.Stop()
	for {
		f, err := s.fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, fileMode)
		if err != nil {
			return nil, fmt.Errorf("dirstore: open lock: %w", err)
		}
		for {
			err = f.TryLock()
			if !vfs.IsLocked(err) {
				break
			}
			if err := wait.Wait(ctx); err != nil {
				_ = f.Close()
				return nil, err
			}
		}
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("dirstore: lock: %w", err)
		}
		same, err := s.names(f, name)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("dirstore: lock: %w", err)
		}
		if same {
			return s.unlocker(f, name), nil
		}
		_ = f.Close() // a released lock whose name was removed: again
	}
}

// unlocker returns the function that removes the lock file's name and
// releases the lock, once.
func (s *Store) unlocker(f vfs.File, name string) func() error {
	var once sync.Once
	var uerr error
	return func() error {
		once.Do(func() {
			rerr := s.fsys.Remove(name)
			if errors.Is(rerr, fs.ErrNotExist) {
				rerr = nil
			}
			uerr = errors.Join(rerr, f.Unlock(), f.Close())
			if uerr != nil {
				uerr = fmt.Errorf("dirstore: unlock: %w", uerr)
			}
		})
		return uerr
	}
}

// UnsafePermissions lists the root-relative paths ("." for the root) of
// every object in the workspace whose mode grants any permission to group or
// others: the root, its directories, bodies, records.db with its -wal and
// -shm files, and lock files. A symbolic link is always listed (its mode is
// 0777), since nothing in a workspace should be one.
func (s *Store) UnsafePermissions(ctx context.Context) (_ []string, retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fi, err := s.fsys.Lstat(".")
	if err != nil {
		return nil, fmt.Errorf("dirstore: check permissions: %w", err)
	}
	var out []string
	if err := s.walk(ctx, ".", fi, &out); err != nil {
		return nil, fmt.Errorf("dirstore: check permissions: %w", err)
	}
	return out, nil
}

// walk appends name to out if fi is unsafe, and descends into directories
// (never through a symbolic link).
func (s *Store) walk(ctx context.Context, name string, fi fs.FileInfo, out *[]string) error {
	if fi.Mode().Perm()&0o077 != 0 || fi.Mode()&fs.ModeSymlink != 0 {
		*out = append(*out, name)
	}
	if !fi.IsDir() {
		return nil
	}
	for e, err := range s.dirEntries(ctx, name) {
		if errors.Is(err, fs.ErrNotExist) && name != "." {
			return nil // removed during the walk
		}
		if err != nil {
			return err
		}
		child := e.Name()
		if name != "." {
			child = name + "/" + child
		}
		ci, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := s.walk(ctx, child, ci, out); err != nil {
			return err
		}
	}
	return nil
}
