package workspace

import (
	"context"

	"github.com/hybridctx/hybridctx/artifact"
)

// UnlockedGC turns o into the mutant the GC tests must catch: bodies are
// deleted from the first scan's view, without the per-body lock and the
// re-check under it.
func UnlockedGC(o *GCOptions) *GCOptions { o.unlocked = true; return o }

// LockBody exposes the per-body lock to the external tests.
func (s *Store) LockBody(ctx context.Context, ref artifact.Ref) (unlock func(), err error) {
	return s.lockBody(ctx, ref)
}

// VerifyHashedBytes is the number of stored bytes VerifyBody has hashed.
func (s *Store) VerifyHashedBytes() int64 { return s.verifyHashed.Load() }
