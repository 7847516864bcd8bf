// Package crashfs is an in-memory vfs.FS that simulates power loss. It keeps,
// next to the current state of every file and directory, the state that an
// fsync made durable: a file's bytes, mode and modification time as of its
// last Sync, and a directory's entries as of its last Sync followed by the
// list of entry changes (create, link, rename, remove, mkdir) made since.
//
// Every operation is numbered. CrashAt(n) makes operation n fail, freezes the
// whole state at that instant into an Image and fails every later operation
// with ErrCrashed, as if the machine had lost power just before operation n.
// Image.Clone then builds the file system a reboot could find: durable state
// only, everything that was current, or any mix that a real file system may
// leave (a prefix of each directory's unsynced changes, a file's unsynced
// bytes lost, kept, cut short or read back as zeros).
//
// The model is POSIX's, which is weaker than most journaling file systems:
// fsync of a file does not make its name durable, and fsync of a directory
// does not make the directory's own name durable in its parent. Symbolic
// links are not supported. Permission bits are enforced as for an ordinary
// (not root) user: a file without the owner's write bit cannot be opened for
// writing.
package crashfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
)

// ErrCrashed is returned by every operation from the crash on. It wraps
// syscall.EIO.
var ErrCrashed = fmt.Errorf("crashfs: the machine crashed: %w", syscall.EIO)

// device is the Dev of every FileInfo, so that vfs.SameFile works.
const device = 0x6372617368

// Op describes one numbered operation.
type Op struct {
	// N is the operation's number, from 1.
	N int
	// Kind names it: the vfs method ("openfile", "mkdir", "chmod", "lstat",
	// "link", "rename", "remove", "read", "write", "sync", "fchmod",
	// "settime", "stat", "readdir", "trylock", "unlock", "close") or the
	// kind given to Note.
	Kind string
	// Path is the name it applies to (for a file method, the name the file
	// was opened by); To is the new name of a link or rename.
	Path, To string
	// Mutating is true for operations that change state: writes, syncs,
	// entry changes, mode and time changes, creating opens, and notes.
	Mutating bool
}

func (o Op) String() string {
	s := fmt.Sprintf("%d %s %s", o.N, o.Kind, o.Path)
	if o.To != "" {
		s += " -> " + o.To
	}
	return s
}

// Options configure New. nil means the defaults.
type Options struct {
	// Clock gives modification times; nil means time.Now.
	Clock func() time.Time
	// Log records every operation, for Log.
	Log bool
}

// FS is the crash-simulating file system. It is safe for concurrent use.
type FS struct {
	mu      sync.Mutex
	root    *node
	ino     uint64
	clock   func() time.Time
	logOn   bool
	log     []Op
	ops     int
	crashAt int
	crashed bool
	image   *Image
	closed  bool
}

var _ vfs.FS = (*FS)(nil)

// New returns an empty file system: a root directory, mode 0700, whose
// existence is durable.
func New(opts *Options) *FS {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	f := &FS{clock: o.Clock, logOn: o.Log}
	f.root = f.newDir(0o700)
	return f
}

// node is a file or a directory.
type node struct {
	ino   uint64
	isDir bool

	mode, syncedMode   fs.FileMode
	mtime, syncedMtime time.Time

	// Files. shared: data (and synced) may be shared with an Image, so
	// they are copied before being written in place.
	data, synced []byte
	shared       bool
	lock         *file

	// Directories: current entries, the entries as of the last Sync, and
	// the changes made since, in order.
	entries map[string]*node
	durable map[string]*node
	pending []dirOp
}

// dirOp is one unsynced change of a directory's entries.
type dirOp struct {
	name string
	to   string // rename within the directory: the new name
	n    *node  // added node; nil for a removal
}

func (d dirOp) apply(m map[string]*node) {
	switch {
	case d.to != "":
		delete(m, d.name)
		m[d.to] = d.n
	case d.n == nil:
		delete(m, d.name)
	default:
		m[d.name] = d.n
	}
}

func (f *FS) newIno() uint64 { f.ino++; return f.ino }

func (f *FS) newDir(perm fs.FileMode) *node {
	now := f.clock()
	return &node{ino: f.newIno(), isDir: true, mode: perm, syncedMode: perm, mtime: now, syncedMtime: now,
		entries: map[string]*node{}, durable: map[string]*node{}}
}

// CrashAt arms a crash at operation n (counted from 1 over every operation
// and Note); 0 disarms it.
func (f *FS) CrashAt(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashAt = n
}

// Crash crashes now: it freezes the state and fails every later operation.
// It returns the frozen image (the same one on later calls).
func (f *FS) Crash() *Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashLocked()
	return f.image
}

func (f *FS) crashLocked() {
	if !f.crashed {
		f.crashed = true
		f.image = &Image{root: deepCopy(f.root, map[*node]*node{})}
	}
}

// Crashed returns the image frozen by the crash, or nil when there was none.
func (f *FS) Crashed() *Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.image
}

// Ops returns the number of operations so far.
func (f *FS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

// Log returns the operations recorded so far (with Options.Log).
func (f *FS) Log() []Op {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// Note counts an operation that happens outside the file system (such as a
// database commit) in the same sequence, so that a crash can fall before or
// after it. It fails with ErrCrashed when the crash falls on or before it;
// the caller must then not perform the operation.
func (f *FS) Note(kind, detail string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.op(kind, detail, "", true)
}

// op numbers one operation. It must be called with mu held, before the
// operation changes anything.
func (f *FS) op(kind, path, to string, mutating bool) error {
	if f.crashed {
		return ErrCrashed
	}
	if f.closed {
		return fs.ErrClosed
	}
	f.ops++
	if f.ops == f.crashAt {
		f.crashLocked()
		return ErrCrashed
	}
	if f.logOn {
		f.log = append(f.log, Op{N: f.ops, Kind: kind, Path: path, To: to, Mutating: mutating})
	}
	return nil
}

// Close closes the file system; later operations fail with fs.ErrClosed.
func (f *FS) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// split cleans name into its elements; "." is the root (no elements).
func split(name string) ([]string, error) {
	if name == "" || strings.HasPrefix(name, "/") {
		return nil, syscall.EINVAL
	}
	var out []string
	for _, e := range strings.Split(name, "/") {
		switch e {
		case "", ".":
		case "..":
			return nil, errors.New("path escapes from parent")
		default:
			out = append(out, e)
		}
	}
	return out, nil
}

// lookup resolves name to its parent directory, last element and node (nil
// when absent). The root has no parent.
func (f *FS) lookup(name string) (parent *node, base string, n *node, err error) {
	elems, err := split(name)
	if err != nil {
		return nil, "", nil, err
	}
	if len(elems) == 0 {
		return nil, ".", f.root, nil
	}
	dir := f.root
	for _, e := range elems[:len(elems)-1] {
		next := dir.entries[e]
		if next == nil {
			return nil, "", nil, fs.ErrNotExist
		}
		if !next.isDir {
			return nil, "", nil, syscall.ENOTDIR
		}
		dir = next
	}
	base = elems[len(elems)-1]
	return dir, base, dir.entries[base], nil
}

// change records an unsynced entry change of dir and applies it.
func change(dir *node, d dirOp) {
	dir.pending = append(dir.pending, d)
	d.apply(dir.entries)
}

// Mkdir implements vfs.FS.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.op("mkdir", name, "", true); err != nil {
		return pathErr("mkdir", name, err)
	}
	parent, base, n, err := f.lookup(name)
	switch {
	case err != nil:
		return pathErr("mkdir", name, err)
	case n != nil:
		return pathErr("mkdir", name, fs.ErrExist)
	}
	change(parent, dirOp{name: base, n: f.newDir(perm.Perm())})
	return nil
}

// Chmod implements vfs.FS.
func (f *FS) Chmod(name string, mode fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.op("chmod", name, "", true); err != nil {
		return pathErr("chmod", name, err)
	}
	_, _, n, err := f.lookup(name)
	if err == nil && n == nil {
		err = fs.ErrNotExist
	}
	if err != nil {
		return pathErr("chmod", name, err)
	}
	n.mode = mode.Perm()
	return nil
}

// Lstat implements vfs.FS.
func (f *FS) Lstat(name string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.op("lstat", name, "", false); err != nil {
		return nil, pathErr("lstat", name, err)
	}
	_, base, n, err := f.lookup(name)
	if err == nil && n == nil {
		err = fs.ErrNotExist
	}
	if err != nil {
		return nil, pathErr("lstat", name, err)
	}
	return n.info(base), nil
}

// Link implements vfs.FS.
func (f *FS) Link(oldname, newname string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.op("link", oldname, newname, true); err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	_, _, src, err := f.lookup(oldname)
	if err == nil && src == nil {
		err = fs.ErrNotExist
	}
	if err == nil && src.isDir {
		err = syscall.EPERM
	}
	var parent *node
	var base string
	var dst *node
	if err == nil {
		parent, base, dst, err = f.lookup(newname)
	}
	if err == nil && dst != nil {
		err = fs.ErrExist
	}
	if err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	change(parent, dirOp{name: base, n: src})
	return nil
}

// Rename implements vfs.FS for files.
func (f *FS) Rename(oldname, newname string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.op("rename", oldname, newname, true); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	sp, sbase, src, err := f.lookup(oldname)
	if err == nil && src == nil {
		err = fs.ErrNotExist
	}
	var dp *node
	var dbase string
	var dst *node
	if err == nil {
		dp, dbase, dst, err = f.lookup(newname)
	}
	if err == nil && (src.isDir || dst != nil && dst.isDir) {
		err = syscall.EISDIR
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	if dst == src {
		return nil
	}
	if sp == dp {
		change(sp, dirOp{name: sbase, to: dbase, n: src})
		return nil
	}
	// Across directories the two halves become durable separately.
	change(sp, dirOp{name: sbase})
	change(dp, dirOp{name: dbase, n: src})
	return nil
}

// Remove implements vfs.FS.
func (f *FS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.op("remove", name, "", true); err != nil {
		return pathErr("remove", name, err)
	}
	parent, base, n, err := f.lookup(name)
	switch {
	case err != nil:
	case n == nil:
		err = fs.ErrNotExist
	case parent == nil:
		err = syscall.EBUSY
	case n.isDir && len(n.entries) > 0:
		err = syscall.ENOTEMPTY
	}
	if err != nil {
		return pathErr("remove", name, err)
	}
	change(parent, dirOp{name: base})
	return nil
}
