// Package backend opens a workspace from a URL. It links only the
// backends every program may use:
//
//	DIR or file:///abs/dir   directory bodies + SQLite records (package dirstore)
//	mem://                   memory (package memstore); a fresh store per Open
//
// Other backends register their URL schemes when a program imports their
// package, so that a program pays only for the backends it uses:
//
//	postgres://… or postgresql://…   import _ "github.com/hybridctx/hybridctx/backend/postgres"
//	                         bodies and records in PostgreSQL (package pgstore)
//	s3://BUCKET?…&index=postgres%3A%2F%2F…   import _ "github.com/hybridctx/hybridctx/backend/s3"
//	                         bodies in S3 or an S3-compatible object store
//	                         (package blobstore), records and locks in the
//	                         PostgreSQL database that the URL-escaped index
//	                         parameter names
//
// Package backend/all imports both. A URL whose scheme has no driver in
// the program is refused with an *UnregisteredError naming the package to
// import. This module ships no driver for gs:// or azblob://: a host that
// needs one registers its own (Register), opening a *blob.Bucket with the
// gocloud.dev driver and passing it to blobstore.New.
//
// Opening a distributed workspace checks that the database and the bucket
// answer before anything is written: a bucket is probed before its index is
// touched, so a missing bucket leaves the database as it was. Errors name the
// backend and its address, never a password.
package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// ErrBadURL is wrapped by errors about workspace URLs that cannot be used.
var ErrBadURL = errors.New("invalid workspace URL")

// ErrNoWorkspace is wrapped by Open's error when Options.MustExist is set and
// the directory holds no workspace.
var ErrNoWorkspace = dirstore.ErrNoWorkspace

// ErrNotBuilt is wrapped when a URL names a backend that this module ships
// but that the program did not import (see UnregisteredError). It is not
// driver.ErrUnavailable, which a driver wraps when its backend cannot be
// reached (docs/workspace.md, "Error categories").
var ErrNotBuilt = errors.New("workspace backend not available in this build")

// Options tune Open. nil means defaults.
type Options struct {
	// Dir tunes the directory backend.
	Dir *dirstore.Options
	// Logger receives the log lines of a backend's client library (the
	// object store's SDK of s3://); nil discards them. Nothing is ever
	// written to standard error.
	Logger *slog.Logger
	// MustExist opens only a workspace that exists: a directory without
	// a workspace fails with an error wrapping ErrNoWorkspace instead of
	// being created. (A database or bucket workspace exists once its
	// database answers: opening it only adds missing tables.)
	MustExist bool
	// UploadMaxAge is the age past which Open removes uploads that a dead
	// writer left unfinished in a distributed workspace; 0 means 24 hours.
	UploadMaxAge time.Duration
}

// Open opens the workspace named by u: a directory path, a file:// URL
// with an absolute path and no host, mem://, or a URL whose scheme a
// driver registered (postgres://, s3:// with their packages imported).
func Open(ctx context.Context, u string, opts *Options) (*workspace.Store, error) {
	b, r, err := openDrivers(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	return workspace.New(b, r), nil
}

// openDrivers opens the body and record drivers of the workspace named by
// u, as Open describes; they are one value except for s3://.
func openDrivers(ctx context.Context, u string, opts *Options) (driver.Bodies, driver.Records, error) {
	if opts == nil {
		opts = &Options{}
	}
	kind, dir, err := Parse(u)
	if err != nil {
		return nil, nil, err
	}
	switch kind {
	case "mem":
		m := memstore.New()
		return m, m, nil
	case "dir":
		var do dirstore.Options
		if opts.Dir != nil {
			do = *opts.Dir
		}
		do.MustExist = do.MustExist || opts.MustExist
		d, err := dirstore.Open(ctx, dir, &do)
		if err != nil {
			return nil, nil, fmt.Errorf("open directory workspace: %w", err)
		}
		return d, d, nil
	}
	d, err := lookup(scheme(u))
	if err != nil {
		return nil, nil, err
	}
	return d.Open(ctx, u, opts)
}

// scheme is the lower-cased scheme of a URL that has one.
func scheme(u string) string {
	s, _, _ := strings.Cut(u, "://")
	return strings.ToLower(s)
}

// Parse classifies u without opening it: kind is "mem", "dir" (with the
// cleaned directory), or the Kind of the driver registered for its scheme
// ("postgres", "s3"), whose Check has accepted u. A scheme with no driver
// in the program is an *UnregisteredError. Error messages never quote u,
// which may hold a password.
func Parse(u string) (kind, dir string, err error) {
	if strings.TrimSpace(u) == "" {
		return "", "", fmt.Errorf("%w: empty", ErrBadURL)
	}
	if strings.ContainsRune(u, 0) {
		return "", "", fmt.Errorf("%w: contains NUL", ErrBadURL)
	}
	i := strings.Index(u, "://")
	if i < 0 {
		return "dir", filepath.Clean(u), nil
	}
	switch s := scheme(u); s {
	case "mem":
		if rest := u[i+3:]; rest != "" {
			return "", "", fmt.Errorf("%w: mem:// takes nothing after the scheme", ErrBadURL)
		}
		return "mem", "", nil
	case "file":
		p, err := url.Parse(u)
		if err != nil {
			return "", "", fmt.Errorf("%w: file:// URL does not parse", ErrBadURL)
		}
		if p.Host != "" {
			return "", "", fmt.Errorf("%w: file:// URL with a host", ErrBadURL)
		}
		if p.RawQuery != "" || p.Fragment != "" {
			return "", "", fmt.Errorf("%w: file:// URL with a query or fragment", ErrBadURL)
		}
		if !filepath.IsAbs(p.Path) {
			return "", "", fmt.Errorf("%w: file:// URL needs an absolute path", ErrBadURL)
		}
		return "dir", filepath.Clean(p.Path), nil
	default:
		if !validScheme(s) {
			return "", "", fmt.Errorf("%w: malformed scheme", ErrBadURL)
		}
		d, err := lookup(s)
		if err != nil {
			return "", "", err
		}
		if d.Check != nil {
			if err := d.Check(u); err != nil {
				return "", "", err
			}
		}
		return d.Kind, "", nil
	}
}

// validScheme reports whether s is a URL scheme as RFC 3986 spells one: a
// letter, then letters, digits, '+', '-' or '.'.
func validScheme(s string) bool {
	for i, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}
