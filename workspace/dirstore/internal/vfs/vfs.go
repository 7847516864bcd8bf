// Package vfs is the small file-system interface the directory workspace
// backend is written against, so that the same code runs on an os.Root in
// production and on the crash-simulating and fault-injecting file systems of
// the tests (packages crashfs and faultfs).
//
// Names are slash-separated and relative to the file system's root; "." is
// the root itself. Errors follow package os: *fs.PathError values wrapping
// fs.ErrNotExist, fs.ErrExist or a syscall.Errno.
package vfs

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
	"time"
)

// FS is a rooted file system: nothing it does can reach outside its root.
type FS interface {
	// OpenFile opens name with the os.O_* flags; perm applies when it is
	// created, and is never widened by the implementation.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Mkdir creates the directory name.
	Mkdir(name string, perm fs.FileMode) error
	// Chmod changes the mode of name, following no symbolic link at the
	// last element only where the platform allows; callers Lstat first.
	Chmod(name string, mode fs.FileMode) error
	// Lstat describes name without following a symbolic link.
	Lstat(name string) (fs.FileInfo, error)
	// Link creates newname as a hard link to oldname; an existing newname
	// is an error wrapping fs.ErrExist.
	Link(oldname, newname string) error
	// Rename atomically replaces newname by oldname.
	Rename(oldname, newname string) error
	// Remove removes the file or empty directory name.
	Remove(name string) error
	// Close releases the file system. Files already open stay usable.
	Close() error
}

// File is an open file or directory.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Stat describes the open file.
	Stat() (fs.FileInfo, error)
	// Sync makes the file's data and metadata durable; for a directory,
	// its entries.
	Sync() error
	// Chmod changes the mode of the open file.
	Chmod(mode fs.FileMode) error
	// SetModTime sets the modification (and access) time of the open file.
	SetModTime(t time.Time) error
	// ReadDir reads up to n entries (all when n <= 0) of a directory, as
	// os.File.ReadDir does; each entry's Info is available without a
	// further look-up by name.
	ReadDir(n int) ([]fs.DirEntry, error)
	// ReadDirNames reads up to n names (all when n <= 0) of a directory
	// without describing them, as os.File.Readdirnames does: cheaper than
	// ReadDir when only names matter.
	ReadDirNames(n int) ([]string, error)
	// TryLock takes an exclusive advisory lock on the open file without
	// waiting. A lock held through another open file, in this process or
	// another, is an error wrapping ErrLocked. Closing the file releases
	// the lock.
	TryLock() error
	// Unlock releases the lock TryLock took.
	Unlock() error
}

// ErrLocked is wrapped by TryLock when the lock is held elsewhere. It is
// syscall.EWOULDBLOCK, so errors from flock(2) match it directly.
var ErrLocked error = syscall.EWOULDBLOCK

// SameFile reports whether two descriptions from this package's file
// systems name the same file (device and inode).
func SameFile(a, b fs.FileInfo) bool {
	if a == nil || b == nil {
		return false
	}
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// IsLocked reports whether err means that a lock is held elsewhere.
func IsLocked(err error) bool { return errors.Is(err, ErrLocked) }
