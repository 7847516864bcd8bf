package crashfs

import (
	"io"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
)

// file is an open file or directory.
type file struct {
	fs     *FS
	n      *node
	name   string
	flag   int
	off    int64
	closed bool
	// Directories: the names ReadDir returns, fixed at its first call.
	names []string
	read  bool
}

var _ vfs.File = (*file)(nil)

// OpenFile implements vfs.FS. O_CREATE, O_EXCL, O_TRUNC and O_APPEND are
// honoured; a new file gets perm's permission bits exactly.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.op("openfile", name, "", flag&(os.O_CREATE|os.O_TRUNC) != 0); err != nil {
		return nil, pathErr("open", name, err)
	}
	parent, base, n, err := f.lookup(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	write := flag&(os.O_WRONLY|os.O_RDWR) != 0
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case n == nil:
		now := f.clock()
		n = &node{ino: f.newIno(), mode: perm.Perm(), syncedMode: perm.Perm(), mtime: now, syncedMtime: now}
		change(parent, dirOp{name: base, n: n})
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, pathErr("open", name, fs.ErrExist)
	case n.isDir && write:
		return nil, pathErr("open", name, syscall.EISDIR)
	case write && n.mode&0o200 == 0, !write && n.mode&0o400 == 0:
		return nil, pathErr("open", name, fs.ErrPermission)
	}
	if flag&os.O_TRUNC != 0 && write && !n.isDir {
		n.data, n.shared = nil, false
		n.mtime = f.clock()
	}
	return &file{fs: f, n: n, name: name, flag: flag}, nil
}

// begin numbers a file operation and checks that the file is open.
func (h *file) begin(kind string, mutating bool) error {
	if err := h.fs.op(kind, h.name, "", mutating); err != nil {
		return pathErr(kind, h.name, err)
	}
	if h.closed {
		return pathErr(kind, h.name, fs.ErrClosed)
	}
	return nil
}

func (h *file) Read(p []byte) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("read", false); err != nil {
		return 0, err
	}
	n, err := h.readAt(p, h.off)
	h.off += int64(n)
	return n, err
}

func (h *file) ReadAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", h.name, syscall.EINVAL)
	}
	n, err := h.readAt(p, off)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

func (h *file) readAt(p []byte, off int64) (int, error) {
	if h.n.isDir {
		return 0, pathErr("read", h.name, syscall.EISDIR)
	}
	if h.flag&(os.O_WRONLY|os.O_RDWR) == os.O_WRONLY {
		return 0, pathErr("read", h.name, syscall.EBADF)
	}
	if off >= int64(len(h.n.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	return copy(p, h.n.data[off:]), nil
}

func (h *file) Write(p []byte) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("write", true); err != nil {
		return 0, err
	}
	if h.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return 0, pathErr("write", h.name, syscall.EBADF)
	}
	if h.flag&os.O_APPEND != 0 {
		h.off = int64(len(h.n.data))
	}
	if h.n.shared {
		h.n.data, h.n.shared = slices.Clone(h.n.data), false
	}
	end := h.off + int64(len(p))
	if end > int64(len(h.n.data)) {
		h.n.data = append(h.n.data, make([]byte, end-int64(len(h.n.data)))...)
	}
	copy(h.n.data[h.off:], p)
	h.off = end
	h.n.mtime = h.fs.clock()
	return len(p), nil
}

func (h *file) Stat() (fs.FileInfo, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("stat", false); err != nil {
		return nil, err
	}
	return h.n.info(baseName(h.name)), nil
}

// Sync makes a file's bytes, mode and time durable, or a directory's
// entries (not its own name in its parent).
func (h *file) Sync() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("sync", true); err != nil {
		return err
	}
	n := h.n
	n.syncedMode, n.syncedMtime = n.mode, n.mtime
	if n.isDir {
		n.durable = maps(n.entries)
		n.pending = nil
	} else {
		n.synced = slices.Clone(n.data)
	}
	return nil
}

func (h *file) Chmod(mode fs.FileMode) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("fchmod", true); err != nil {
		return err
	}
	h.n.mode = mode.Perm()
	return nil
}

func (h *file) SetModTime(t time.Time) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("settime", true); err != nil {
		return err
	}
	h.n.mtime = t
	return nil
}

func (h *file) ReadDir(n int) ([]fs.DirEntry, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("readdir", false); err != nil {
		return nil, err
	}
	var out []fs.DirEntry
	err := h.next(n, func(name string, c *node) int {
		out = append(out, fs.FileInfoToDirEntry(c.info(name)))
		return len(out)
	})
	return out, err
}

func (h *file) ReadDirNames(n int) ([]string, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("readdirnames", false); err != nil {
		return nil, err
	}
	var out []string
	err := h.next(n, func(name string, _ *node) int {
		out = append(out, name)
		return len(out)
	})
	return out, err
}

// next feeds up to n of the directory's remaining entries (all when
// n <= 0) to add, which returns how many it holds; it returns io.EOF when
// n > 0 and none remain.
func (h *file) next(n int, add func(name string, c *node) int) error {
	if !h.n.isDir {
		return pathErr("readdirent", h.name, syscall.ENOTDIR)
	}
	if !h.read {
		h.read = true
		for name := range h.n.entries {
			h.names = append(h.names, name)
		}
		slices.Sort(h.names)
	}
	got := 0
	for len(h.names) > 0 && (n <= 0 || got < n) {
		name := h.names[0]
		h.names = h.names[1:]
		if c := h.n.entries[name]; c != nil {
			got = add(name, c)
		}
	}
	if n > 0 && got == 0 {
		return io.EOF
	}
	return nil
}

func (h *file) TryLock() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("trylock", false); err != nil {
		return err
	}
	if h.n.lock != nil && h.n.lock != h {
		return pathErr("flock", h.name, vfs.ErrLocked)
	}
	h.n.lock = h
	return nil
}

func (h *file) Unlock() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.begin("unlock", false); err != nil {
		return err
	}
	if h.n.lock == h {
		h.n.lock = nil
	}
	return nil
}

// Close releases the file and its lock. After a crash it fails, but the
// file is closed all the same.
func (h *file) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.closed {
		return pathErr("close", h.name, fs.ErrClosed)
	}
	h.closed = true
	if h.n.lock == h {
		h.n.lock = nil
	}
	if err := h.fs.op("close", h.name, "", false); err != nil {
		return pathErr("close", h.name, err)
	}
	return nil
}

func baseName(name string) string {
	elems, _ := split(name)
	if len(elems) == 0 {
		return "."
	}
	return elems[len(elems)-1]
}

func maps(m map[string]*node) map[string]*node {
	out := make(map[string]*node, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// info describes n under name. Sys is a *syscall.Stat_t carrying the device
// and inode, as on the operating system.
func (n *node) info(name string) fs.FileInfo {
	fi := fileInfo{name: name, size: int64(len(n.data)), mode: n.mode, mtime: n.mtime,
		sys: &syscall.Stat_t{Dev: device, Ino: n.ino, Size: int64(len(n.data))}}
	if n.isDir {
		fi.mode |= fs.ModeDir
		fi.size = 0
	}
	return fi
}

type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
	sys   *syscall.Stat_t
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return i.mtime }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return i.sys }
