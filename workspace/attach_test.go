package workspace_test

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// attachOf attaches data for owner on s at t0 (bytes form).
func attachOf(ctx context.Context, s *workspace.Store, owner artifact.Owner, data []byte) (workspace.AttachCase, error) {
	return drivertest.AttachData(ctx, s, owner, data, false, time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC))
}

// TestAttachFailures: each step of Attach that fails reports its case and
// the cause; a context that ends before anything landed is no decision.
func TestAttachFailures(t *testing.T) {
	ctx := context.Background()
	data := bodyOf(40, 1000)
	t.Run("record lookup", func(t *testing.T) {
		s, in, _ := instrumented(&drivertest.Hooks{GetRecord: func(context.Context, artifact.Owner, artifact.Ref) error { return errInjected }})
		c, err := attachOf(ctx, s, ownerA, data)
		if c != workspace.AttachReadFailed || !errors.Is(err, errInjected) {
			t.Fatalf("Attach = %v, %v", c, err)
		}
		if n := in.Counts(); n.NewWriters != 0 || n.CreateRecords != 0 {
			t.Fatalf("a failed lookup wrote: %+v", n)
		}
	})
	t.Run("own body unreadable", func(t *testing.T) {
		h := &drivertest.Hooks{}
		s, in, _ := instrumented(h)
		if c, err := attachOf(ctx, s, ownerA, data); c != workspace.AttachCreated || err != nil {
			t.Fatalf("first Attach = %v, %v", c, err)
		}
		// The verification opens the body (and reads the size of what it
		// opened); a stat would fail the same way.
		h.Stat = func(context.Context, string) error { return errInjected }
		h.Open = func(context.Context, string) error { return errInjected }
		in.Reset()
		c, err := attachOf(ctx, s, ownerA, data)
		if c != workspace.AttachReadFailed || !errors.Is(err, errInjected) || in.Counts().NewWriters != 0 {
			t.Fatalf("Attach = %v, %v, %+v", c, err, in.Counts())
		}
	})
	t.Run("body write", func(t *testing.T) {
		s, _, m := instrumented(&drivertest.Hooks{Commit: func(context.Context, string, bool) error { return errInjected }})
		c, err := attachOf(ctx, s, ownerA, data)
		if c != workspace.AttachWriteFailed || !errors.Is(err, errInjected) || len(storedKeys(t, m)) != 0 {
			t.Fatalf("Attach = %v, %v", c, err)
		}
	})
	t.Run("record commit", func(t *testing.T) {
		s, _, m := instrumented(&drivertest.Hooks{CreateRecord: func(context.Context, artifact.Record) error { return errInjected }})
		c, err := attachOf(ctx, s, ownerA, data)
		if c != workspace.AttachRecordFailed || !errors.Is(err, errInjected) {
			t.Fatalf("Attach = %v, %v", c, err)
		}
		// The body stays; attaching it again writes no second body.
		if len(storedKeys(t, m)) != 1 {
			t.Fatalf("body after a failed record commit: %v", storedKeys(t, m))
		}
	})
	t.Run("canceled after write", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s, _, _ := instrumented(&drivertest.Hooks{AfterCommit: func(context.Context, string, bool) { cancel() }})
		c, err := attachOf(cctx, s, ownerA, data)
		if c != workspace.AttachCanceledAfterWrite || !errors.Is(err, context.Canceled) {
			t.Fatalf("Attach = %v, %v", c, err)
		}
		if _, err := s.GetRecord(ctx, ownerA, artifact.RefOf(data)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a record after the cancellation: %v", err)
		}
	})
	t.Run("canceled before anything", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		s, _, m := instrumented(&drivertest.Hooks{GetRecord: func(context.Context, artifact.Owner, artifact.Ref) error {
			cancel()
			return context.Canceled
		}})
		c, err := attachOf(cctx, s, ownerA, data)
		if c != 0 || !errors.Is(err, context.Canceled) || len(storedKeys(t, m)) != 0 {
			t.Fatalf("Attach = %v, %v", c, err)
		}
	})
	t.Run("pending already ended", func(t *testing.T) {
		s, _, _ := instrumented(nil)
		p, err := s.IngestBytes(ctx, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if c, err := s.Attach(ctx, p, artifact.Record{Owner: ownerA}); c != workspace.AttachWriteFailed || err == nil {
			t.Fatalf("Attach of a committed Pending = %v, %v", c, err)
		}
	})
}

// TestAttachCaseNames: every case has its name, and an unknown one says so.
func TestAttachCaseNames(t *testing.T) {
	want := map[workspace.AttachCase]string{
		0: "none", workspace.AttachCreated: "created", workspace.AttachExisting: "existing",
		workspace.AttachReplaced: "replaced", workspace.AttachLostRace: "lost_race",
		workspace.AttachReadFailed: "read_failed", workspace.AttachWriteFailed: "write_failed",
		workspace.AttachRecordFailed: "record_failed", workspace.AttachCanceledAfterWrite: "canceled_after_write",
		99: "unknown",
	}
	for c, name := range want {
		if c.String() != name {
			t.Errorf("AttachCase(%d) = %q, want %q", c, c.String(), name)
		}
	}
}

// countingLocker is a memory backend that counts the per-body locks taken.
type countingLocker struct {
	*memstore.Store
	locks atomic.Int64
}

func (c *countingLocker) Lock(ctx context.Context, key string) (func() error, error) {
	c.locks.Add(1)
	return c.Store.Lock(ctx, key)
}

// TestAttachLocksOnlyStoredBodies: a new body is written without its lock
// (garbage collection cannot collect what is not there yet, and what this
// call writes is protected by the grace period); a stored body is reused
// by a new owner under it; an owner's own record needs none.
func TestAttachLocksOnlyStoredBodies(t *testing.T) {
	ctx := context.Background()
	m := memstore.New()
	cl := &countingLocker{Store: m}
	s := workspace.New(cl, m)
	data := bodyOf(41, 1000)
	for _, step := range []struct {
		name  string
		owner artifact.Owner
		want  workspace.AttachCase
		locks int64
	}{
		{"new body", ownerA, workspace.AttachCreated, 0},
		{"stored body, new owner", ownerB, workspace.AttachCreated, 1},
		{"own record", ownerA, workspace.AttachExisting, 0},
	} {
		before := cl.locks.Load()
		c, err := attachOf(ctx, s, step.owner, data)
		if c != step.want || err != nil {
			t.Fatalf("%s: Attach = %v, %v; want %v", step.name, c, err, step.want)
		}
		if n := cl.locks.Load() - before; n != step.locks {
			t.Fatalf("%s: %d body locks taken, want %d", step.name, n, step.locks)
		}
	}
}
