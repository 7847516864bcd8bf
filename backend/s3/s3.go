// Package s3 registers the s3:// workspace URL with package backend:
// bodies in S3 or an S3-compatible object store (package blobstore),
// records and locks in the PostgreSQL database that the URL-escaped index
// parameter names (package pgstore). A program that opens such URLs
// through backend.Open imports it for that effect alone:
//
//	import _ "github.com/hybridctx/hybridctx/backend/s3"
//
// It links the AWS SDK for Go v2 and the PostgreSQL driver. Open opens one
// with the stores' options tuned.
package s3

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/backend/internal/pgopen"
	"github.com/hybridctx/hybridctx/workspace/blobstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
)

func init() {
	backend.Register("s3", backend.Driver{
		Kind:  "s3",
		Check: func(u string) error { _, _, err := SplitIndex(u); return err },
		Open: func(ctx context.Context, u string, opts *backend.Options) (driver.Bodies, driver.Records, error) {
			b, r, err := Open(ctx, u, opts, nil)
			if err != nil {
				return nil, nil, err
			}
			return b, r, nil
		},
	})
}

// Options tune Open's stores. nil means defaults.
type Options struct {
	// Index tunes the PostgreSQL store of the records; its Bodies field
	// is set by Open.
	Index *pgstore.Options
	// Bodies tunes the bodies in the bucket; its Locker is set by Open
	// to the index.
	Bodies *blobstore.Options
}

// Open opens the s3:// workspace u as backend.Open does, with its stores
// tuned by o: the bucket is probed before its index is touched, so a
// missing bucket leaves the database as it was. It removes the uploads a
// dead writer left for longer than opts.UploadMaxAge, and sends the SDK's
// log lines to opts.Logger. workspace.New(bodies, index) makes them a
// workspace.
func Open(ctx context.Context, u string, opts *backend.Options, o *Options) (*blobstore.Store, *pgstore.Store, error) {
	if opts == nil {
		opts = &backend.Options{}
	}
	if o == nil {
		o = &Options{}
	}
	bucketURL, indexURL, err := SplitIndex(u)
	if err != nil {
		return nil, nil, err
	}
	bucket, err := blobstore.OpenBucketWith(ctx, bucketURL, &blobstore.BucketOptions{Logger: opts.Logger})
	if err != nil {
		if errors.Is(err, blobstore.ErrInvalidURL) {
			err = fmt.Errorf("%w: %w", backend.ErrBadURL, err)
		}
		return nil, nil, fmt.Errorf("open s3 workspace: %w", err)
	}
	idx, err := pgopen.Open(ctx, indexURL, o.Index, pgstore.BodiesElsewhere)
	if err != nil {
		bucket.Close()
		return nil, nil, fmt.Errorf("open s3 workspace index: %w", err)
	}
	var bo blobstore.Options
	if o.Bodies != nil {
		bo = *o.Bodies
	}
	bo.Locker = idx
	bodies, err := blobstore.New(bucket, &bo)
	if err != nil {
		bucket.Close()
		idx.Close()
		return nil, nil, fmt.Errorf("open s3 workspace: %w", err)
	}
	age := pgopen.MaxAge(opts)
	_, err1 := bodies.SweepUploads(ctx, age)
	_, err2 := idx.SweepUploads(ctx, age)
	if err := errors.Join(err1, err2); err != nil {
		bodies.Close()
		idx.Close()
		return nil, nil, fmt.Errorf("open s3 workspace: %w", err)
	}
	return bodies, idx, nil
}

// SplitIndex separates the index parameter of an s3:// URL from the bucket
// URL that blobstore opens. Its errors wrap backend.ErrBadURL and never
// quote u.
func SplitIndex(u string) (bucketURL, indexURL string, err error) {
	p, err := url.Parse(u)
	if err != nil {
		// url.Parse quotes the input, which may hold a password.
		return "", "", fmt.Errorf("%w: s3:// URL does not parse", backend.ErrBadURL)
	}
	if p.Host == "" {
		return "", "", fmt.Errorf("%w: s3:// URL names no bucket", backend.ErrBadURL)
	}
	if p.User != nil || (p.Path != "" && p.Path != "/") || p.Fragment != "" {
		return "", "", fmt.Errorf("%w: s3:// URL takes a bucket and query parameters only", backend.ErrBadURL)
	}
	q, err := url.ParseQuery(p.RawQuery)
	if err != nil {
		return "", "", fmt.Errorf("%w: s3:// URL has a malformed query", backend.ErrBadURL)
	}
	idx := q["index"]
	if len(idx) != 1 {
		return "", "", fmt.Errorf("%w: s3:// URL needs exactly one index=postgres://… parameter (URL-escaped) for its records", backend.ErrBadURL)
	}
	scheme, _, _ := strings.Cut(idx[0], "://")
	if s := strings.ToLower(scheme); s != "postgres" && s != "postgresql" {
		return "", "", fmt.Errorf("%w: s3:// index must be a postgres:// URL", backend.ErrBadURL)
	}
	q.Del("index")
	p.RawQuery = q.Encode()
	p.Path = ""
	return p.String(), idx[0], nil
}
