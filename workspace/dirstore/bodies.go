package dirstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// listBatch is how many directory entries List and the temp sweep read at
// once, so that a large body directory is never loaded whole.
const listBatch = 256

// errWriterEnded is returned by a Writer used after Commit or Abort.
var errWriterEnded = fmt.Errorf("dirstore: writer already committed or aborted: %w", fs.ErrClosed)

// NewWriter starts a new body in a private temporary file in sha256/, which
// it holds locked until the writer ends, so that no sweep removes it.
func (s *Store) NewWriter(ctx context.Context) (_ driver.Writer, retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 {
		var b [16]byte
		_, _ = rand.Read(b[:])
		name := bodyDir + "/" + tempPrefix + hex.EncodeToString(b[:])
		f, err := s.fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
		if err != nil {
			lastErr = err
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			break
		}
		err = s.claim(f, name)
		if err == nil {
			return &writer{s: s, f: f, temp: name}, nil
		}
		_ = s.fsys.Remove(name)
		_ = f.Close()
		lastErr = err
		if !errors.Is(err, errSwept) {
			break
		}
	}
	return nil, fmt.Errorf("dirstore: create temporary body: %w", lastErr)
}

// writer writes one body to a temporary file. It is used by one goroutine
// at a time, as driver.Writer requires.
type writer struct {
	s    *Store
	f    vfs.File // open (and locked) until the writer ends
	temp string   // root-relative name of the temporary file
	// sealed: the file was made read-only, stamped and fsynced, so a
	// Commit that found the key taken can be retried without redoing it.
	sealed bool
	// broken is a sticky error: writing or sealing failed, so the bytes
	// must never be published.
	broken error
	done   bool
	n      int64 // bytes written
}

// Write appends p to the temporary file.
func (w *writer) Write(p []byte) (_ int, retErr error) {
	defer markErr(&retErr)
	if w.done || w.sealed {
		return 0, errWriterEnded
	}
	if w.broken != nil {
		return 0, w.broken
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	if err != nil {
		w.broken = err
	}
	return n, err
}

// seal makes the temporary file read-only, stamps it with the commit time
// and fsyncs it, so that bytes, mode and time are durable together.
func (w *writer) seal() error {
	if w.sealed {
		return nil
	}
	err := w.f.Chmod(bodyMode)
	if err == nil {
		err = w.f.SetModTime(w.s.clock())
	}
	if err == nil {
		err = w.f.Sync()
	}
	if err != nil {
		w.broken = fmt.Errorf("dirstore: seal body: %w", err)
		return w.broken
	}
	w.sealed = true
	return nil
}

// Commit makes the written bytes durable and then visible under key: by a
// hard link when replace is false (create-only), by a rename when it is
// true. It returns only once the body directory was fsynced; a failure of
// the clean-up that follows (removing the temporary name, closing it) is not
// reported, since the body is committed and the leftover is swept later.
func (w *writer) Commit(ctx context.Context, key string, replace bool) (retErr error) {
	defer markErr(&retErr)
	if w.done {
		return errWriterEnded
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if w.broken != nil {
		return w.broken
	}
	if err := w.seal(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	final := bodyPath(key)
	// Pending before visible: whoever finds the name meanwhile waits for
	// its fsync (awaitPublished).
	w.s.dur.publishing(key, replace)
	if !replace {
		if err := w.s.fsys.Link(w.temp, final); err != nil {
			w.s.dur.published(key, false)
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("dirstore: body %s: %w", key, fs.ErrExist)
			}
			return fmt.Errorf("dirstore: publish body: %w", err)
		}
	} else if err := w.s.fsys.Rename(w.temp, final); err != nil {
		w.s.dur.published(key, false)
		return fmt.Errorf("dirstore: replace body: %w", err)
	}
	// The body is visible: whatever happens next, this writer is over.
	w.done = true
	// Concurrent commits share one fsync of the body directory.
	err := w.s.syncBodies()
	w.s.dur.published(key, err == nil)
	if !replace {
		_ = w.s.fsys.Remove(w.temp)
	}
	_ = w.f.Close()
	return err
}

// Abort discards the temporary file. It is a no-op after a successful
// Commit and safe to call more than once. A temporary file it could not
// remove is unlocked once closed, so the next Open sweeps it.
func (w *writer) Abort() (retErr error) {
	defer markErr(&retErr)
	if w.done {
		return nil
	}
	w.done = true
	var err error
	if rerr := w.s.fsys.Remove(w.temp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = rerr
	}
	err = errors.Join(err, w.f.Close())
	if err != nil {
		return fmt.Errorf("dirstore: abort body: %w", err)
	}
	return nil
}

// Open opens the committed body key for reading. The reader also implements
// driver.RangeReader and driver.Restatter. Anything at the body's name that
// is not a regular file is not opened: it reads as an empty body of size -1.
func (s *Store) Open(ctx context.Context, key string) (_ driver.Reader, retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := s.awaitPublished(key); err != nil {
		return nil, err
	}
	name := bodyPath(key)
	// Look before opening, so that a planted symbolic link or FIFO is
	// never followed or blocked on.
	li, err := s.lstatBody(name)
	if err != nil {
		return nil, err
	}
	if !li.Mode().IsRegular() {
		return notBody(key, li), nil
	}
	f, err := s.fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("dirstore: open body: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("dirstore: open body: %w", err)
	}
	if !fi.Mode().IsRegular() {
		// Swapped between the look and the open. (A swap for another
		// regular file, through a link inside the root, is caught by
		// the digest check like any other wrong bytes.)
		_ = f.Close()
		return notBody(key, fi), nil
	}
	return &reader{f: f, key: key, info: infoOf(key, fi)}, nil
}

// lstatBody describes the body file name without following a symbolic
// link.
func (s *Store) lstatBody(name string) (fs.FileInfo, error) {
	fi, err := s.fsys.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("dirstore: stat body: %w", err)
	}
	return fi, nil
}

// notBody is the reader of a body name that is not a regular file: empty,
// of size -1, so that no size or digest check can pass.
func notBody(key string, fi fs.FileInfo) driver.Reader {
	return placeholder{info: driver.Info{Key: key, Size: -1, ModTime: fi.ModTime()}}
}

type placeholder struct{ info driver.Info }

func (placeholder) Read([]byte) (int, error) { return 0, io.EOF }
func (placeholder) Close() error             { return nil }
func (p placeholder) Info() driver.Info      { return p.info }

// reader reads one body through an open file.
type reader struct {
	f    vfs.File
	key  string
	info driver.Info
}

// Read reads from the current offset.
func (r *reader) Read(p []byte) (int, error) { return r.f.Read(p) }

// ReadAt reads at off from the same file (driver.RangeReader).
func (r *reader) ReadAt(p []byte, off int64) (int, error) { return r.f.ReadAt(p, off) }

// Close closes the file.
func (r *reader) Close() error { return r.f.Close() }

// Info describes the body as it was when it was opened.
func (r *reader) Info() driver.Info { return r.info }

// Restat describes the opened file again (driver.Restatter).
func (r *reader) Restat() (_ driver.Info, retErr error) {
	defer markErr(&retErr)
	fi, err := r.f.Stat()
	if err != nil {
		return driver.Info{}, fmt.Errorf("dirstore: restat body: %w", err)
	}
	return infoOf(r.key, fi), nil
}

// Compile-time checks of the optional reader capabilities.
var (
	_ driver.RangeReader = (*reader)(nil)
	_ driver.Restatter   = (*reader)(nil)
	_ io.ReaderAt        = (*reader)(nil)
)

// infoOf describes a body file. Version joins device, inode, size and
// modification time, which change whenever the bytes could have.
func infoOf(key string, fi fs.FileInfo) driver.Info {
	info := driver.Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		info.Version = strings.Join([]string{
			strconv.FormatUint(uint64(st.Dev), 10),
			strconv.FormatUint(st.Ino, 10),
			strconv.FormatInt(fi.Size(), 10),
			strconv.FormatInt(fi.ModTime().UnixNano(), 10),
		}, ":")
	}
	return info
}

// bodyInfo describes what is at a body's name: a regular file as it is,
// anything else as size -1.
func bodyInfo(key string, fi fs.FileInfo) driver.Info {
	if !fi.Mode().IsRegular() {
		return driver.Info{Key: key, Size: -1, ModTime: fi.ModTime()}
	}
	return infoOf(key, fi)
}

// Stat describes the committed body key without reading it.
func (s *Store) Stat(ctx context.Context, key string) (_ driver.Info, retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return driver.Info{}, err
	}
	if err := checkKey(key); err != nil {
		return driver.Info{}, err
	}
	if err := s.awaitPublished(key); err != nil {
		return driver.Info{}, err
	}
	fi, err := s.lstatBody(bodyPath(key))
	if err != nil {
		return driver.Info{}, err
	}
	return bodyInfo(key, fi), nil
}

// Delete removes the committed body key (or whatever else is at its name,
// without following it) and makes the removal durable.
func (s *Store) Delete(ctx context.Context, key string) (retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	s.dur.forget(key)
	if err := s.fsys.Remove(bodyPath(key)); err != nil {
		return fmt.Errorf("dirstore: delete body: %w", err)
	}
	if err := s.syncDir(bodyDir); err != nil {
		return fmt.Errorf("dirstore: sync body directory: %w", err)
	}
	return nil
}

// List yields every entry of the body directory named by a valid key,
// reading the directory in batches; entries that are not regular files
// have size -1. Temporary files are skipped.
func (s *Store) List(ctx context.Context) iter.Seq2[driver.Info, error] {
	return markSeq(func(yield func(driver.Info, error) bool) {
		for e, err := range s.dirEntries(ctx, bodyDir) {
			if err != nil {
				yield(driver.Info{}, fmt.Errorf("dirstore: list bodies: %w", err))
				return
			}
			if checkKey(e.Name()) != nil {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted while listing
			}
			if err != nil {
				yield(driver.Info{}, fmt.Errorf("dirstore: list bodies: %w", err))
				return
			}
			if !yield(bodyInfo(e.Name(), fi), nil) {
				return
			}
		}
	})
}

// dirEntries yields the entries of the directory name under the root in
// batches, checking ctx before each batch.
func (s *Store) dirEntries(ctx context.Context, name string) iter.Seq2[fs.DirEntry, error] {
	return func(yield func(fs.DirEntry, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		d, err := s.fsys.OpenFile(name, os.O_RDONLY, 0)
		if err != nil {
			yield(nil, err)
			return
		}
		defer d.Close()
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			entries, err := d.ReadDir(listBatch)
			for _, e := range entries {
				if !yield(e, nil) {
					return
				}
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
		}
	}
}
