// Package dirstore is the embedded default workspace backend: bodies are
// plain files in a directory and records live in a SQLite database next to
// them. One *Store implements driver.Bodies, driver.Records, driver.Locker,
// driver.Checker, driver.IntegrityChecker (SQLite's integrity_check, and a
// write-ahead log deleted under a running process), driver.ReferenceScanner,
// io.Closer and the workspace's record-expiry capability (ExpireRecords),
// and several processes (the CLI and MCP proxies) may share
// one directory at the same time.
//
// # Layout
//
// A workspace directory holds:
//
//	.                   the root, created 0700
//	sha256/             0700, one flat directory of bodies
//	sha256/<hex>        a body: the exact bytes, no header, no compression,
//	                    named by the 64 lowercase hex digits of its SHA-256,
//	                    mode 0400 (so `sha256sum sha256/*` checks them all)
//	sha256/.tmp-<rand>  a body being written (created 0600), flock(2)ed by
//	                    its writer until the writer ends; a leftover nobody
//	                    holds (its writer was killed) is swept when a Store
//	                    is opened
//	records.db          the SQLite records (WAL mode, 0600), with its
//	                    records.db-wal and records.db-shm companions
//	locks/<hex>         0600 files that carry the per-key flock of Lock,
//	                    present only while the lock is held
//
// Anything at a body's name that is not a regular file (a planted symbolic
// link, say) is never followed or opened: it is presented as a body of size
// -1 that reads as empty, so every check reports it corrupt, a replacing
// Commit overwrites it and Delete removes it.
//
// # Durability
//
// A body is written to a temporary file, made read-only, stamped with its
// commit time, fsynced, and then published under its key by a hard link
// (create-only: an existing key is reported as fs.ErrExist and left
// untouched) or by a rename (replace); the directory is fsynced before
// Commit returns. A body's modification time is therefore when it was
// committed, which garbage collection compares with its grace period.
// Records are written with synchronous=FULL, and the workspace writes a
// record only after the body's Commit returned, so a record is never left
// pointing at a body that was not durable.
//
// Concurrent work shares fsyncs (group commit) without acknowledging
// anything early: Commits that published bodies while an fsync of the
// body directory was running share the next one, and CreateRecord calls
// that arrive while a record transaction commits are committed together
// in the next transaction (one write-ahead-log fsync). Each caller returns
// only once the fsync or commit covering its own body or record ended, and
// a failure reaches every caller it covered and no other. A body that
// another Commit has published but whose directory fsync has not ended
// yet is waited for by Stat and Open, and CreateRecord first syncs the
// body directory for a body this Store has not seen become durable (one
// published by another process, say), so that no record outlives a crash
// its body's name does not.
//
// # Confinement
//
// Every file access after Open goes through an os.Root on the workspace
// directory (behind the small interface of package internal/vfs, so that
// tests can substitute a crash-simulating or fault-injecting file system),
// so a symbolic link planted in the tree cannot lead outside it.
// Keys are checked to be 64 lowercase hex digits before any file-system call,
// and a body name that is a symbolic link is never followed, even when it
// points inside the root (see Layout). SQLite opens records.db by path; Open
// creates that file through the root first and refuses it unless it is a
// regular file.
//
// # Concurrency
//
// Commit with replace false and CreateRecord each have exactly one winner
// among any number of goroutines and processes. Lock holds a flock(2), which
// excludes across processes as well as within one.
//
// # Errors
//
// As package driver requires, an absent body or record wraps fs.ErrNotExist
// and a create-only Commit that found the key taken wraps fs.ErrExist. A key
// that is not 64 lowercase hex digits, or a zero reference, wraps
// fs.ErrInvalid. Every method checks its context first.
//
// The package is for Linux (it reads syscall.Stat_t and uses flock).
package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// Directory and file names inside the workspace root.
const (
	bodyDir    = "sha256"
	lockDir    = "locks"
	dbName     = "records.db"
	tempPrefix = driver.TempPrefix
)

// Permission modes of what the Store creates.
const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600
	bodyMode fs.FileMode = 0o400
)

// tempGrace is how old a temporary body must be before Open sweeps it on a
// file system that cannot tell, through its lock, whether its writer lives.
const tempGrace = time.Hour

// defaultBusyTimeout is the SQLite busy timeout when Options leaves it zero.
const defaultBusyTimeout = 10 * time.Second

// Options tune Open. The zero value and nil mean the defaults.
type Options struct {
	// MustExist makes Open fail, with an error wrapping ErrNoWorkspace,
	// unless dir already holds a workspace (its records database), instead
	// of creating one: for commands that only read or check.
	MustExist bool
	// BusyTimeout for SQLite; zero means 10s.
	BusyTimeout time.Duration
	// Clock gives the commit time stamped on bodies; nil means time.Now.
	Clock func() time.Time

	// fsys, when non-nil, replaces the directory for everything but the
	// SQLite database, which stays in dir (which must then exist). Only
	// this package's tests set it (crash and fault simulation).
	fsys vfs.FS
	// noGroup turns group commit off (every Commit runs its own fsync of
	// the body directory, every CreateRecord its own transaction): only
	// for the benchmarks that measure what group commit brings.
	noGroup bool
}

// Store is a directory workspace backend. It is safe for concurrent use by
// many goroutines, and several processes may open the same directory.
// Construct it with Open and release it with Close.
type Store struct {
	dir       string
	fsys      vfs.FS
	rec       *records
	clock     func() time.Time
	noDirSync bool       // a test-only mutant: Commit skips the directory fsync
	noGroup   bool       // Options.noGroup
	bodySync  syncGroup  // joins the body directory fsyncs of concurrent commits
	dur       durability // which bodies this Store published are durable
	// bodyDirF is the body directory, held open for its fsyncs so that a
	// commit opens no directory for them.
	bodyDirF vfs.File

	closeOnce sync.Once
	closeErr  error
}

// The Store is one value for every driver role.
var (
	_ driver.Bodies    = (*Store)(nil)
	_ driver.Records   = (*Store)(nil)
	_ driver.Locker    = (*Store)(nil)
	_ driver.Checker   = (*Store)(nil)
	_ driver.TempDirer = (*Store)(nil)
	_ io.Closer        = (*Store)(nil)
)

// Open opens (creating if needed) the workspace directory dir. nil opts =
// defaults. It creates the layout described in the package documentation,
// sweeps the temporary bodies of writers that are gone and brings the
// records schema up to date.
func Open(ctx context.Context, dir string, opts *Options) (_ *Store, retErr error) {
	defer markErr(&retErr)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout < 0 {
		return nil, fmt.Errorf("dirstore: negative busy timeout: %w", fs.ErrInvalid)
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = defaultBusyTimeout
	}
	if dir == "" {
		return nil, fmt.Errorf("dirstore: empty directory: %w", fs.ErrInvalid)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("dirstore: %w", err)
	}
	if o.MustExist && !holdsWorkspace(abs) {
		return nil, ErrNoWorkspace
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	fsys := o.fsys
	if fsys == nil {
		if err := mkdirDurable(abs); err != nil {
			return nil, fmt.Errorf("dirstore: create workspace: %w", err)
		}
		root, err := os.OpenRoot(abs)
		if err != nil {
			return nil, fmt.Errorf("dirstore: open workspace: %w", err)
		}
		fsys = vfs.OS(root)
	}
	s := &Store{dir: abs, fsys: fsys, clock: o.Clock, noGroup: o.noGroup}
	if err := s.init(ctx, o); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// TempDir returns the body directory, where the Store writes its own
// temporary bodies: a file there named with driver.TempPrefix that nobody
// holds locked is swept by the next Open.
func (s *Store) TempDir() string { return filepath.Join(s.dir, bodyDir) }

func (s *Store) init(ctx context.Context, o Options) error {
	if err := s.initFiles(ctx); err != nil {
		return err
	}
	rec, err := openRecords(ctx, filepath.Join(s.dir, dbName), o.BusyTimeout)
	if err != nil {
		return s.explainIOError(err)
	}
	rec.noGroup = o.noGroup
	s.rec = rec
	return nil
}

// initFiles creates the layout, sweeps leftovers and makes new entries of
// the root durable.
func (s *Store) initFiles(ctx context.Context) error {
	created := false
	for _, d := range []string{bodyDir, lockDir} {
		c, err := s.ensureDir(d)
		if err != nil {
			return err
		}
		created = created || c
	}
	d, err := s.fsys.OpenFile(bodyDir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("dirstore: open %s: %w", bodyDir, err)
	}
	s.bodyDirF = d
	if err := s.sweepTemps(ctx); err != nil {
		return err
	}
	c, err := s.createDBFile()
	if err != nil {
		return err
	}
	if created || c {
		// New entries in the root must be durable before any body or
		// record placed in them is acknowledged.
		if err := s.syncDir("."); err != nil {
			return fmt.Errorf("dirstore: sync workspace: %w", err)
		}
	}
	return nil
}

// ensureDir creates the directory name under the root (0700) unless it
// exists, and refuses it unless it is a real directory. It reports whether
// it created it.
func (s *Store) ensureDir(name string) (created bool, err error) {
	err = s.fsys.Mkdir(name, dirMode)
	switch {
	case err == nil:
		created = true
		// Mkdir's mode is cut by the umask; a restrictive umask must not
		// leave a directory the Store cannot use. The mode is never wider
		// than 0700, so there is no moment at which it is exposed.
		if err := s.fsys.Chmod(name, dirMode); err != nil {
			return created, fmt.Errorf("dirstore: %w", err)
		}
	case !errors.Is(err, fs.ErrExist):
		return false, fmt.Errorf("dirstore: create %s: %w", name, err)
	}
	fi, err := s.fsys.Lstat(name)
	if err != nil {
		return created, fmt.Errorf("dirstore: %w", err)
	}
	if !fi.IsDir() {
		return created, fmt.Errorf("dirstore: %s is not a directory (%v)", name, fi.Mode().Type())
	}
	return created, nil
}

// createDBFile creates records.db through the root with mode 0600 before
// SQLite opens it by path, so that it (and the -wal and -shm files SQLite
// derives from its mode) is private from the start.
func (s *Store) createDBFile() (created bool, err error) {
	f, err := s.fsys.OpenFile(dbName, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	switch {
	case err == nil:
		created = true
		cerr := f.Chmod(fileMode)
		if err := errors.Join(cerr, f.Close()); err != nil {
			return created, fmt.Errorf("dirstore: create %s: %w", dbName, err)
		}
	case !errors.Is(err, fs.ErrExist):
		return false, fmt.Errorf("dirstore: create %s: %w", dbName, err)
	}
	for _, name := range []string{dbName, dbName + "-wal", dbName + "-shm"} {
		fi, err := s.fsys.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) && name != dbName {
			continue
		}
		if err != nil {
			return created, fmt.Errorf("dirstore: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return created, fmt.Errorf("dirstore: %s is not a regular file (%v)", name, fi.Mode().Type())
		}
	}
	return created, nil
}

// mkdirDurable creates dir and its missing parents (0700) and, when dir
// itself was missing, fsyncs its parent so that the new entry is durable.
func mkdirDurable(dir string) error {
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(dir))
	if err != nil {
		return err
	}
	serr := d.Sync()
	return errors.Join(serr, d.Close())
}

// Dir returns the absolute path of the workspace directory.
func (s *Store) Dir() string { return s.dir }

// Close closes the records database and the directory root. It is safe to
// call more than once; later calls return the first result.
func (s *Store) Close() (retErr error) {
	defer markErr(&retErr)
	s.closeOnce.Do(func() {
		var errs []error
		if s.rec != nil {
			errs = append(errs, s.rec.close())
		}
		if s.bodyDirF != nil {
			errs = append(errs, s.bodyDirF.Close())
		}
		errs = append(errs, s.fsys.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// checkKey reports an error wrapping fs.ErrInvalid unless key is exactly 64
// lowercase hex digits. It is called before any file-system access.
func checkKey(key string) error {
	if len(key) != 64 {
		return fmt.Errorf("dirstore: key is not 64 hex digits (%d bytes): %w", len(key), fs.ErrInvalid)
	}
	if !artifact.ValidDigest(key) {
		return fmt.Errorf("dirstore: key is not lowercase hex: %w", fs.ErrInvalid)
	}
	return nil
}

// bodyPath returns the root-relative name of a body.
func bodyPath(key string) string { return bodyDir + "/" + key }

// syncDir fsyncs the directory name under the root, so that links, renames
// and removals in it are durable.
func (s *Store) syncDir(name string) error {
	if name == bodyDir && s.bodyDirF != nil {
		return s.bodyDirF.Sync()
	}
	d, err := s.fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	serr := d.Sync()
	return errors.Join(serr, d.Close())
}
