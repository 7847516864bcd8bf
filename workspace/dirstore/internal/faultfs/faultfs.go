// Package faultfs wraps a vfs.FS to inject errors: operation n (counted from
// 1 over every method of the file system and of the files it opened) fails
// with a chosen errno, once or from then on. It is for tests of the
// directory workspace backend.
//
// A failed operation does not reach the wrapped file system, except Close,
// which always closes the wrapped file (as close(2) releases the descriptor
// even when it reports an error) and Write, which writes the first half of
// its buffer before failing (as a full disk may).
package faultfs

import (
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
)

// FS is a fault-injecting vfs.FS. It is safe for concurrent use.
type FS struct {
	inner vfs.FS

	mu       sync.Mutex
	ops      int
	failAt   int
	errno    syscall.Errno
	sticky   bool
	injected int
	kinds    []string
}

var _ vfs.FS = (*FS)(nil)

// Wrap returns a fault-injecting view of inner, with no fault armed.
func Wrap(inner vfs.FS) *FS { return &FS{inner: inner} }

// Fail arms a fault: operation number n (counted from 1 since Wrap) fails
// with errno, and with sticky set every later operation fails too. n = 0
// disarms.
func (f *FS) Fail(n int, errno syscall.Errno, sticky bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAt, f.errno, f.sticky = n, errno, sticky
}

// Ops returns the number of operations so far.
func (f *FS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

// Kinds returns the kind of every operation so far, in order.
func (f *FS) Kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.kinds...)
}

// Injected returns the number of operations failed so far.
func (f *FS) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

// step numbers one operation and returns the injected error, if any.
func (f *FS) step(kind string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops++
	f.kinds = append(f.kinds, kind)
	if f.failAt > 0 && (f.ops == f.failAt || f.sticky && f.ops > f.failAt) {
		f.injected++
		return f.errno
	}
	return nil
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// OpenFile implements vfs.FS.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if err := f.step("openfile"); err != nil {
		return nil, pathErr("open", name, err)
	}
	h, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &file{fs: f, inner: h, name: name}, nil
}

// Mkdir implements vfs.FS.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	if err := f.step("mkdir"); err != nil {
		return pathErr("mkdir", name, err)
	}
	return f.inner.Mkdir(name, perm)
}

// Chmod implements vfs.FS.
func (f *FS) Chmod(name string, mode fs.FileMode) error {
	if err := f.step("chmod"); err != nil {
		return pathErr("chmod", name, err)
	}
	return f.inner.Chmod(name, mode)
}

// Lstat implements vfs.FS.
func (f *FS) Lstat(name string) (fs.FileInfo, error) {
	if err := f.step("lstat"); err != nil {
		return nil, pathErr("lstat", name, err)
	}
	return f.inner.Lstat(name)
}

// Link implements vfs.FS.
func (f *FS) Link(oldname, newname string) error {
	if err := f.step("link"); err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	return f.inner.Link(oldname, newname)
}

// Rename implements vfs.FS.
func (f *FS) Rename(oldname, newname string) error {
	if err := f.step("rename"); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return f.inner.Rename(oldname, newname)
}

// Remove implements vfs.FS.
func (f *FS) Remove(name string) error {
	if err := f.step("remove"); err != nil {
		return pathErr("remove", name, err)
	}
	return f.inner.Remove(name)
}

// Close implements vfs.FS; it is not counted and always closes inner.
func (f *FS) Close() error { return f.inner.Close() }

type file struct {
	fs    *FS
	inner vfs.File
	name  string
}

func (h *file) Read(p []byte) (int, error) {
	if err := h.fs.step("read"); err != nil {
		return 0, pathErr("read", h.name, err)
	}
	return h.inner.Read(p)
}

func (h *file) ReadAt(p []byte, off int64) (int, error) {
	if err := h.fs.step("read"); err != nil {
		return 0, pathErr("read", h.name, err)
	}
	return h.inner.ReadAt(p, off)
}

func (h *file) Write(p []byte) (int, error) {
	if err := h.fs.step("write"); err != nil {
		n, _ := h.inner.Write(p[:len(p)/2])
		return n, pathErr("write", h.name, err)
	}
	return h.inner.Write(p)
}

func (h *file) Stat() (fs.FileInfo, error) {
	if err := h.fs.step("stat"); err != nil {
		return nil, pathErr("stat", h.name, err)
	}
	return h.inner.Stat()
}

func (h *file) Sync() error {
	if err := h.fs.step("sync"); err != nil {
		return pathErr("sync", h.name, err)
	}
	return h.inner.Sync()
}

func (h *file) Chmod(mode fs.FileMode) error {
	if err := h.fs.step("fchmod"); err != nil {
		return pathErr("chmod", h.name, err)
	}
	return h.inner.Chmod(mode)
}

func (h *file) SetModTime(t time.Time) error {
	if err := h.fs.step("settime"); err != nil {
		return pathErr("futimes", h.name, err)
	}
	return h.inner.SetModTime(t)
}

func (h *file) ReadDir(n int) ([]fs.DirEntry, error) {
	if err := h.fs.step("readdir"); err != nil {
		return nil, pathErr("readdirent", h.name, err)
	}
	return h.inner.ReadDir(n)
}

func (h *file) ReadDirNames(n int) ([]string, error) {
	if err := h.fs.step("readdirnames"); err != nil {
		return nil, pathErr("readdirent", h.name, err)
	}
	return h.inner.ReadDirNames(n)
}

func (h *file) TryLock() error {
	if err := h.fs.step("trylock"); err != nil {
		return pathErr("flock", h.name, err)
	}
	return h.inner.TryLock()
}

func (h *file) Unlock() error {
	if err := h.fs.step("unlock"); err != nil {
		return pathErr("flock", h.name, err)
	}
	return h.inner.Unlock()
}

// Close always closes the wrapped file; an injected fault replaces its
// result.
func (h *file) Close() error {
	ferr := h.fs.step("close")
	err := h.inner.Close()
	if ferr != nil {
		return pathErr("close", h.name, ferr)
	}
	return err
}
