package dirstore

import (
	"context"
	"time"

	"github.com/hybridctx/hybridctx/workspace/dirstore/internal/vfs"
)

// WithFS makes Open use fsys instead of the directory for everything but
// the SQLite database, which stays in the directory (which must then
// exist), and returns o.
func WithFS(o *Options, fsys vfs.FS) *Options { o.fsys = fsys; return o }

// WithoutGroupCommit makes Open's Store run one fsync of the body directory
// per Commit and one transaction per CreateRecord, as before group commit,
// and returns o.
func WithoutGroupCommit(o *Options) *Options { o.noGroup = true; return o }

// OpenBodies opens the body half of a Store on fsys, as Open does (layout,
// sweep) but without a records database, so that tests which reopen many
// crash states need not open SQLite each time. Its record methods must not
// be called.
func OpenBodies(ctx context.Context, fsys vfs.FS, clock func() time.Time) (*Store, error) {
	return openBodies(ctx, &Store{dir: "/nonexistent", fsys: fsys, clock: clock})
}

// OpenBodiesWithoutDirSync is OpenBodies for the mutant the crash tests
// must catch: Commit skips the fsync of the body directory after publishing
// a body.
func OpenBodiesWithoutDirSync(ctx context.Context, fsys vfs.FS, clock func() time.Time) (*Store, error) {
	return openBodies(ctx, &Store{dir: "/nonexistent", fsys: fsys, clock: clock, noDirSync: true})
}

func openBodies(ctx context.Context, s *Store) (*Store, error) {
	if err := s.initFiles(ctx); err != nil {
		return nil, err
	}
	return s, nil
}
