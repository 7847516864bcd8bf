// Package backend opens a workspace from a URL, wiring the backends this
// module ships:
//
//	DIR or file:///abs/dir   directory bodies + SQLite records (package dirstore)
//	mem://                   memory (package memstore); a fresh store per Open
//
// The distributed schemes of the spec (postgres://, s3://, gs://, azblob://)
// are recognized and reported as not available in this build.
package backend

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// ErrBadURL is wrapped by errors about workspace URLs that cannot be used.
var ErrBadURL = errors.New("invalid workspace URL")

// ErrUnavailable is wrapped when a URL names a backend this build lacks.
var ErrUnavailable = errors.New("workspace backend not available in this build")

// Options tune Open. nil means defaults.
type Options struct {
	// Dir tunes the directory backend.
	Dir *dirstore.Options
}

// Open opens the workspace named by u: a directory path, a file:// URL
// with an absolute path and no host, or mem://.
func Open(ctx context.Context, u string, opts *Options) (*workspace.Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	kind, dir, err := Parse(u)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "mem":
		m := memstore.New()
		return workspace.New(m, m), nil
	case "dir":
		d, err := dirstore.Open(ctx, dir, opts.Dir)
		if err != nil {
			return nil, fmt.Errorf("open directory workspace: %w", err)
		}
		return workspace.New(d, d), nil
	}
	return nil, fmt.Errorf("%w: %s://", ErrUnavailable, kind)
}

// Parse classifies u without opening it: kind is "mem", "dir" (with the
// cleaned directory) or the URL scheme of a recognized backend this build
// lacks (an error wrapping ErrUnavailable is then returned by Open).
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
	scheme := strings.ToLower(u[:i])
	switch scheme {
	case "mem":
		if rest := u[i+3:]; rest != "" {
			return "", "", fmt.Errorf("%w: mem:// takes nothing after the scheme", ErrBadURL)
		}
		return "mem", "", nil
	case "file":
		p, err := url.Parse(u)
		if err != nil {
			return "", "", fmt.Errorf("%w: %v", ErrBadURL, err)
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
	case "postgres", "postgresql", "s3", "gs", "azblob":
		return scheme, "", nil
	}
	return "", "", fmt.Errorf("%w: unknown scheme %q", ErrBadURL, scheme)
}
