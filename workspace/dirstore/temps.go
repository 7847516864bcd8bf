package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
)

// Temporary bodies: a writer creates its file under a random name, locks it
// and holds the lock until it ends; a sweep removes the files nobody holds.

// errSwept means a new temporary file was taken by a concurrent sweep
// before its writer could lock it; the writer tries another name.
var errSwept = errors.New("dirstore: temporary body swept before it was locked")

// claim locks the new temporary file f and checks that name still names
// it: a sweep that ran between its creation and the lock may have removed
// it (errSwept).
func (s *Store) claim(f vfs.File, name string) error {
	if err := f.TryLock(); err != nil {
		if vfs.IsLocked(err) {
			return errSwept
		}
		return err
	}
	same, err := s.names(f, name)
	switch {
	case err != nil:
		return err
	case !same:
		return errSwept
	}
	return nil
}

// names reports whether name currently names the open file f.
func (s *Store) names(f vfs.File, name string) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	li, err := s.fsys.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return vfs.SameFile(fi, li), nil
}

// sweepTemps removes the temporary bodies whose writer is gone: those
// whose lock it can take (a live writer holds its file locked). On a file
// system without working locks it falls back to removing those older than
// tempGrace. It reads names only, so that opening a workspace of many
// bodies costs no look-up per body. Removal is best effort; only an
// unreadable body directory is an error.
func (s *Store) sweepTemps(ctx context.Context) error {
	cutoff := s.clock().Add(-tempGrace)
	d, err := s.fsys.OpenFile(bodyDir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("dirstore: sweep temporary bodies: %w", err)
	}
	defer d.Close()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		names, err := d.ReadDirNames(listBatch)
		for _, name := range names {
			if strings.HasPrefix(name, tempPrefix) {
				s.sweepTemp(bodyDir+"/"+name, cutoff)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("dirstore: sweep temporary bodies: %w", err)
		}
	}
}

// sweepTemp removes the temporary body name if its writer is gone.
func (s *Store) sweepTemp(name string, cutoff time.Time) {
	fi, err := s.fsys.Lstat(name)
	if err != nil {
		return
	}
	if !fi.Mode().IsRegular() {
		_ = s.fsys.Remove(name) // never one of ours
		return
	}
	f, err := s.fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	err = f.TryLock()
	switch {
	case err == nil:
		// Held by us now, so no writer owns it; removing it under the
		// lock also defeats a writer that created it a moment ago and
		// has yet to lock it (it checks its name after locking).
		_ = s.fsys.Remove(name)
	case vfs.IsLocked(err):
		// A live writer.
	case fi.ModTime().Before(cutoff):
		_ = s.fsys.Remove(name)
	}
}
