// Package pgopen opens the PostgreSQL store behind the postgres:// and
// s3:// workspace URLs: the one place backend/postgres and backend/s3
// share.
package pgopen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
)

// Open opens the PostgreSQL store of u, tuned by o (nil means defaults),
// keeping bodies as mode says. A URL pgstore cannot use is an error
// wrapping backend.ErrBadURL as well.
func Open(ctx context.Context, u string, o *pgstore.Options, mode pgstore.BodyMode) (*pgstore.Store, error) {
	var c pgstore.Options
	if o != nil {
		c = *o
	}
	c.Bodies = mode
	s, err := pgstore.Open(ctx, u, &c)
	if errors.Is(err, pgstore.ErrInvalidURL) {
		err = fmt.Errorf("%w: %w", backend.ErrBadURL, err)
	}
	return s, err
}

// MaxAge is opts.UploadMaxAge, or pgstore.DefaultUploadMaxAge when opts is
// nil or leaves it 0.
func MaxAge(opts *backend.Options) time.Duration {
	if opts != nil && opts.UploadMaxAge > 0 {
		return opts.UploadMaxAge
	}
	return pgstore.DefaultUploadMaxAge
}
