// Package postgres registers the postgres:// and postgresql:// workspace
// URLs with package backend: bodies and records in PostgreSQL (package
// pgstore). A program that opens such URLs through backend.Open imports it
// for that effect alone:
//
//	import _ "github.com/hybridctx/hybridctx/backend/postgres"
//
// Open opens one with the store's options tuned.
package postgres

import (
	"context"
	"fmt"

	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/backend/internal/pgopen"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
)

func init() {
	d := backend.Driver{Kind: "postgres", Open: func(ctx context.Context, u string, opts *backend.Options) (driver.Bodies, driver.Records, error) {
		s, err := Open(ctx, u, opts, nil)
		if err != nil {
			return nil, nil, err
		}
		return s, s, nil
	}}
	backend.Register("postgres", d)
	backend.Register("postgresql", d)
}

// Open opens the PostgreSQL workspace u as backend.Open does, with
// the store tuned by store (nil means defaults; its Bodies field is set
// here), and removes the uploads a dead writer left for longer than
// opts.UploadMaxAge. The store holds both the bodies and the records:
// workspace.New(s, s) makes it a workspace.
func Open(ctx context.Context, u string, opts *backend.Options, store *pgstore.Options) (*pgstore.Store, error) {
	pg, err := pgopen.Open(ctx, u, store, pgstore.BodiesHere)
	if err != nil {
		return nil, fmt.Errorf("open postgres workspace: %w", err)
	}
	if _, err := pg.SweepUploads(ctx, pgopen.MaxAge(opts)); err != nil {
		pg.Close()
		return nil, fmt.Errorf("open postgres workspace: %w", err)
	}
	return pg, nil
}
