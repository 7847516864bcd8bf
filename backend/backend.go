// Package backend opens a workspace from a URL, wiring the backends this
// module ships:
//
//	DIR or file:///abs/dir   directory bodies + SQLite records (package dirstore)
//	mem://                   memory (package memstore); a fresh store per Open
//	postgres://… or postgresql://…
//	                         bodies and records in PostgreSQL (package pgstore)
//	s3://BUCKET?…&index=postgres%3A%2F%2F…
//	                         bodies in S3 or an S3-compatible object store
//	                         (package blobstore), records and locks in the
//	                         PostgreSQL database that the URL-escaped index
//	                         parameter names
//
// gs:// and azblob:// are recognized and reported as not available in this
// build (their client libraries are large); a host that needs them opens a
// *blob.Bucket with the gocloud.dev driver and passes it to blobstore.New.
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
	"github.com/hybridctx/hybridctx/workspace/blobstore"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/memstore"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
)

// ErrBadURL is wrapped by errors about workspace URLs that cannot be used.
var ErrBadURL = errors.New("invalid workspace URL")

// ErrNoWorkspace is wrapped by Open's error when Options.MustExist is set and
// the directory holds no workspace.
var ErrNoWorkspace = dirstore.ErrNoWorkspace

// ErrUnavailable is wrapped when a URL names a backend this build lacks.
var ErrUnavailable = errors.New("workspace backend not available in this build")

// Options tune Open. nil means defaults.
type Options struct {
	// Dir tunes the directory backend.
	Dir *dirstore.Options
	// Postgres tunes the PostgreSQL store of postgres:// and of an s3
	// index; its Bodies field is set by Open.
	Postgres *pgstore.Options
	// Blob tunes the bodies of s3://; its Locker is set by Open to the
	// index.
	Blob *blobstore.Options
	// Logger receives the log lines of the object store's SDK (s3://);
	// nil discards them. Nothing is ever written to standard error.
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
// with an absolute path and no host, mem://, postgres:// or s3://.
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
	case "postgres":
		return openPostgres(ctx, u, opts)
	case "s3":
		return openS3(ctx, u, opts)
	}
	return nil, nil, fmt.Errorf("%w: %s://", ErrUnavailable, kind)
}

func pgOptions(opts *Options, mode pgstore.BodyMode) *pgstore.Options {
	var o pgstore.Options
	if opts.Postgres != nil {
		o = *opts.Postgres
	}
	o.Bodies = mode
	return &o
}

func uploadMaxAge(opts *Options) time.Duration {
	if opts.UploadMaxAge > 0 {
		return opts.UploadMaxAge
	}
	return pgstore.DefaultUploadMaxAge
}

// badURL adds ErrBadURL to the parse errors of the stores.
func badURL(err error) error {
	if errors.Is(err, pgstore.ErrInvalidURL) || errors.Is(err, blobstore.ErrInvalidURL) {
		return fmt.Errorf("%w: %w", ErrBadURL, err)
	}
	return err
}

func openPostgres(ctx context.Context, u string, opts *Options) (driver.Bodies, driver.Records, error) {
	pg, err := pgstore.Open(ctx, u, pgOptions(opts, pgstore.BodiesHere))
	if err != nil {
		return nil, nil, fmt.Errorf("open postgres workspace: %w", badURL(err))
	}
	if _, err := pg.SweepUploads(ctx, uploadMaxAge(opts)); err != nil {
		pg.Close()
		return nil, nil, fmt.Errorf("open postgres workspace: %w", err)
	}
	return pg, pg, nil
}

func openS3(ctx context.Context, u string, opts *Options) (driver.Bodies, driver.Records, error) {
	bucketURL, indexURL, err := splitIndex(u)
	if err != nil {
		return nil, nil, err
	}
	bucket, err := blobstore.OpenBucketWith(ctx, bucketURL, &blobstore.BucketOptions{Logger: opts.Logger})
	if err != nil {
		return nil, nil, fmt.Errorf("open s3 workspace: %w", badURL(err))
	}
	idx, err := pgstore.Open(ctx, indexURL, pgOptions(opts, pgstore.BodiesElsewhere))
	if err != nil {
		bucket.Close()
		return nil, nil, fmt.Errorf("open s3 workspace index: %w", badURL(err))
	}
	var bo blobstore.Options
	if opts.Blob != nil {
		bo = *opts.Blob
	}
	bo.Locker = idx
	bodies, err := blobstore.New(bucket, &bo)
	if err != nil {
		bucket.Close()
		idx.Close()
		return nil, nil, fmt.Errorf("open s3 workspace: %w", err)
	}
	age := uploadMaxAge(opts)
	_, err1 := bodies.SweepUploads(ctx, age)
	_, err2 := idx.SweepUploads(ctx, age)
	if err := errors.Join(err1, err2); err != nil {
		bodies.Close()
		idx.Close()
		return nil, nil, fmt.Errorf("open s3 workspace: %w", err)
	}
	return bodies, idx, nil
}

// splitIndex separates the index parameter of an s3:// URL from the bucket
// URL that gocloud.dev/blob opens.
func splitIndex(u string) (bucketURL, indexURL string, err error) {
	p, err := url.Parse(u)
	if err != nil {
		// url.Parse quotes the input, which may hold a password.
		return "", "", fmt.Errorf("%w: s3:// URL does not parse", ErrBadURL)
	}
	if p.Host == "" {
		return "", "", fmt.Errorf("%w: s3:// URL names no bucket", ErrBadURL)
	}
	if p.User != nil || (p.Path != "" && p.Path != "/") || p.Fragment != "" {
		return "", "", fmt.Errorf("%w: s3:// URL takes a bucket and query parameters only", ErrBadURL)
	}
	q, err := url.ParseQuery(p.RawQuery)
	if err != nil {
		return "", "", fmt.Errorf("%w: s3:// URL has a malformed query", ErrBadURL)
	}
	idx := q["index"]
	if len(idx) != 1 {
		return "", "", fmt.Errorf("%w: s3:// URL needs exactly one index=postgres://… parameter (URL-escaped) for its records", ErrBadURL)
	}
	scheme, _, _ := strings.Cut(idx[0], "://")
	if s := strings.ToLower(scheme); s != "postgres" && s != "postgresql" {
		return "", "", fmt.Errorf("%w: s3:// index must be a postgres:// URL", ErrBadURL)
	}
	q.Del("index")
	p.RawQuery = q.Encode()
	p.Path = ""
	return p.String(), idx[0], nil
}

// Parse classifies u without opening it: kind is "mem", "dir" (with the
// cleaned directory), "postgres", "s3", or the URL scheme of a recognized
// backend this build lacks (an error wrapping ErrUnavailable is then
// returned by Open). Error messages never quote u, which may hold a
// password.
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
	case "postgres", "postgresql":
		return "postgres", "", nil
	case "s3":
		if _, _, err := splitIndex(u); err != nil {
			return "", "", err
		}
		return "s3", "", nil
	case "gs", "azblob":
		return scheme, "", nil
	}
	return "", "", fmt.Errorf("%w: unknown scheme %q", ErrBadURL, scheme)
}
