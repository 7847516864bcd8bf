// Package filestore is the file-store adapter: it exposes one binding's
// workspace to an agent framework's file tools (read, write, exists, list
// children, create directory) for interoperation. It is not a second
// authority: offload and rehydration never use it, it cannot read or write
// artifact records, and it can neither delete nor search.
//
// # Where files live
//
// A file's bytes are a body of the bound workspace, written and read
// through workspace.Store like any other (hashed while written, verified
// before a byte is returned, deduplicated). The workspace addresses bodies
// by digest only, so the path → body mapping is kept by an Index, per
// owner; the default MemIndex lasts as long as the process, which suits the
// scratch files agent frameworks write during a run, and a host that needs
// names to survive restarts supplies its own Index. No artifact record is
// ever created, so the adapter's files never appear in `ls`, cannot be read
// with read_artifact, and count as orphaned bodies to `verify`; `gc`
// collects them once they are older than its grace period and unnamed by
// any record.
//
// # Paths
//
// Every path is validated before anything else happens: a rooted path (a
// leading `/` or `\`, a drive letter) is rejected, then the path is
// canonicalized (CanonicalFile, CanonicalDir). Paths are case-sensitive.
// Paths in the reserved namespace (Reserved: the workspace's own sha256/,
// locks/, records.db names, .hybridctx and reference-like artifact:
// paths) are invisible — they read as absent and list as nothing — and
// unwritable (ErrReserved).
//
// # Errors and cancellation
//
// Every operation checks its context first and again after validating the
// path, so a cancelled context fails before any storage call. A missing
// file wraps fs.ErrNotExist, a bad path ErrInvalidPath, a listing over the
// cap ErrListCap (never a silently truncated list), delete and search
// errors.ErrUnsupported (after path validation).
package filestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/workspace"
)

// Defaults of Options.
const (
	DefaultListCap      = 1000
	DefaultMaxFileBytes = 64 << 20
)

// Errors of the adapter.
var (
	// ErrReserved means a write into the reserved namespace; it wraps
	// fs.ErrPermission.
	ErrReserved = fmt.Errorf("filestore: reserved path: %w", fs.ErrPermission)
	// ErrListCap means a directory has more children than the list cap.
	ErrListCap = errors.New("filestore: directory has more children than the list cap")
	// ErrTooLarge means a file larger than Options.MaxFileBytes.
	ErrTooLarge = errors.New("filestore: file too large")
	// ErrInvalidOptions is wrapped by New's errors.
	ErrInvalidOptions = errors.New("filestore: invalid options")
)

// Options configure a Store. The zero value means defaults.
type Options struct {
	// Index keeps the path → body mapping; nil means a new MemIndex.
	Index Index
	// ListCap bounds the children List returns; 0 means DefaultListCap.
	ListCap int
	// MaxFileBytes bounds a file; 0 means DefaultMaxFileBytes.
	MaxFileBytes int64
}

// Store is the adapter over one binding. It is safe for concurrent use.
type Store struct {
	b       *hybridctx.Binding
	ws      *workspace.Store
	index   Index
	listCap int
	maxFile int64
}

// New returns the adapter over binding, which must have a workspace
// (hybridctx.ErrNoWorkspace otherwise).
func New(binding *hybridctx.Binding, opts *Options) (*Store, error) {
	if binding == nil || binding.Store() == nil {
		return nil, hybridctx.ErrNoWorkspace
	}
	s := &Store{b: binding, ws: binding.Store(), listCap: DefaultListCap, maxFile: DefaultMaxFileBytes}
	if opts != nil {
		if opts.ListCap < 0 || opts.MaxFileBytes < 0 {
			return nil, fmt.Errorf("%w: list cap and max file bytes must be >= 0", ErrInvalidOptions)
		}
		s.index = opts.Index
		s.listCap = cmp.Or(opts.ListCap, s.listCap)
		s.maxFile = cmp.Or(opts.MaxFileBytes, s.maxFile)
	}
	if s.index == nil {
		s.index = NewMemIndex()
	}
	return s, nil
}

// ListCap returns the most children List returns.
func (s *Store) ListCap() int { return s.listCap }

func notExist() error { return fmt.Errorf("filestore: no such file: %w", fs.ErrNotExist) }

// file runs the common prologue of a file operation: context, path, context.
func file(ctx context.Context, p string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	c, err := cleanFile(p)
	if err != nil {
		return "", err
	}
	return c, ctx.Err()
}

// dir is file for directories.
func dir(ctx context.Context, p string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	c, err := cleanDir(p)
	if err != nil {
		return "", err
	}
	return c, ctx.Err()
}

// Read returns the file's bytes, verified against its digest. A missing
// file (or a reserved path) wraps fs.ErrNotExist; a body that no longer
// matches wraps workspace.ErrCorrupt.
func (s *Store) Read(ctx context.Context, path string) ([]byte, error) {
	p, err := file(ctx, path)
	if err != nil {
		return nil, err
	}
	if Reserved(p) {
		return nil, notExist()
	}
	e, err := s.index.Get(ctx, s.b.Owner(), p)
	if err != nil {
		return nil, err
	}
	b, err := s.ws.ReadVerified(ctx, e.Ref, e.Size, 0, e.Size)
	if err != nil {
		return nil, fmt.Errorf("filestore: read: %w", err)
	}
	return b, nil
}

// Write creates or replaces the file. Concurrent writes to one path leave
// one of the written values, never a mix. A reserved path is ErrReserved, a
// file over the size limit ErrTooLarge.
func (s *Store) Write(ctx context.Context, path string, content []byte) error {
	p, err := file(ctx, path)
	if err != nil {
		return err
	}
	if Reserved(p) {
		return ErrReserved
	}
	if int64(len(content)) > s.maxFile {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(content), s.maxFile)
	}
	body, err := s.ws.IngestBytes(ctx, content, &workspace.IngestOptions{MaxBytes: s.maxFile})
	if err == nil {
		_, err = body.Commit(ctx)
	}
	if err != nil {
		return fmt.Errorf("filestore: write: %w", err)
	}
	return s.index.Put(ctx, s.b.Owner(), Entry{Path: p, Ref: body.Ref(), Size: body.Size()})
}

// Exists reports whether the file exists (false for a reserved path).
func (s *Store) Exists(ctx context.Context, path string) (bool, error) {
	p, err := file(ctx, path)
	if err != nil {
		return false, err
	}
	if Reserved(p) {
		return false, nil
	}
	_, err = s.index.Get(ctx, s.b.Owner(), p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// DirEntry is one child of a directory.
type DirEntry struct {
	// Name is the child's last segment; Path its canonical path.
	Name, Path string
	// IsDir marks a directory (a prefix of some file's path).
	IsDir bool
	// Size is a file's size in bytes (0 for a directory).
	Size int64
}

// List returns the direct children of a directory ("" or "." for the root):
// directories first, then files, each sorted by name (byte order). A
// directory exists while a file lies under it; a path may be both a file
// and a directory. More children than the list cap is ErrListCap, never a
// truncated list. Reserved paths are never listed.
func (s *Store) List(ctx context.Context, path string) ([]DirEntry, error) {
	d, err := dir(ctx, path)
	if err != nil {
		return nil, err
	}
	if d != "" && Reserved(d) {
		return nil, nil
	}
	prefix := d
	if d != "" {
		prefix += "/"
	}
	dirs := map[string]bool{}
	var out []DirEntry
	for e, err := range s.index.List(ctx, s.b.Owner(), prefix) {
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if Reserved(e.Path) || !strings.HasPrefix(e.Path, prefix) {
			continue
		}
		name, rest, isDir := strings.Cut(e.Path[len(prefix):], "/")
		if name == "" || (isDir && rest == "") {
			continue
		}
		if isDir {
			if dirs[name] {
				continue
			}
			dirs[name] = true
			out = append(out, DirEntry{Name: name, Path: prefix + name, IsDir: true})
		} else {
			out = append(out, DirEntry{Name: name, Path: e.Path, Size: e.Size})
		}
		if len(out) > s.listCap {
			return nil, fmt.Errorf("%w (%d)", ErrListCap, s.listCap)
		}
	}
	slices.SortFunc(out, func(a, b DirEntry) int {
		if a.IsDir != b.IsDir {
			if a.IsDir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// CreateDir validates a directory path and stores nothing: directories
// exist only through the files under them, so an empty one is invisible to
// List. A reserved path is ErrReserved.
func (s *Store) CreateDir(ctx context.Context, path string) error {
	d, err := dir(ctx, path)
	if err != nil {
		return err
	}
	if d != "" && Reserved(d) {
		return ErrReserved
	}
	return nil
}

// Delete validates the path, then fails with errors.ErrUnsupported: the
// adapter never deletes anything.
func (s *Store) Delete(ctx context.Context, path string) error {
	if _, err := file(ctx, path); err != nil {
		return err
	}
	return fmt.Errorf("filestore: delete: %w", errors.ErrUnsupported)
}

// Search validates the directory, then fails with errors.ErrUnsupported: a
// content search cannot be bounded before it reads.
func (s *Store) Search(ctx context.Context, path, _ string) error {
	if _, err := dir(ctx, path); err != nil {
		return err
	}
	return fmt.Errorf("filestore: search: %w", errors.ErrUnsupported)
}
