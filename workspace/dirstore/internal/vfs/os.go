package vfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// OS returns the FS of an os.Root. Closing the FS closes the root.
func OS(root *os.Root) FS { return osFS{root} }

type osFS struct{ r *os.Root }

func (o osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := o.r.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (o osFS) Mkdir(name string, perm fs.FileMode) error { return o.r.Mkdir(name, perm) }
func (o osFS) Chmod(name string, mode fs.FileMode) error { return o.r.Chmod(name, mode) }
func (o osFS) Lstat(name string) (fs.FileInfo, error)    { return o.r.Lstat(name) }
func (o osFS) Link(oldname, newname string) error        { return o.r.Link(oldname, newname) }
func (o osFS) Rename(oldname, newname string) error      { return o.r.Rename(oldname, newname) }
func (o osFS) Remove(name string) error                  { return o.r.Remove(name) }
func (o osFS) Close() error                              { return o.r.Close() }

type osFile struct{ *os.File }

func (f osFile) ReadDirNames(n int) ([]string, error) { return f.Readdirnames(n) }

func (f osFile) SetModTime(t time.Time) error {
	tv := syscall.NsecToTimeval(t.UnixNano())
	return f.control("futimes", func(fd int) error {
		return syscall.Futimes(fd, []syscall.Timeval{tv, tv})
	})
}

func (f osFile) TryLock() error {
	return f.control("flock", func(fd int) error { return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) })
}

func (f osFile) Unlock() error {
	return f.control("flock", func(fd int) error { return syscall.Flock(fd, syscall.LOCK_UN) })
}

// control runs fn on the descriptor, retrying on EINTR, and wraps its error
// as a *fs.PathError.
func (f osFile) control(op string, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	cerr := rc.Control(func(fd uintptr) {
		for {
			ferr = fn(int(fd))
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	if ferr != nil {
		return &fs.PathError{Op: op, Path: f.Name(), Err: ferr}
	}
	return nil
}
