package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

const (
	day     = 24 * time.Hour
	maxAge  = 30 * day
	gcGrace = day
)

var (
	ownerA = artifact.Owner{User: "a", Workflow: "wf", Session: "s"}
	ownerB = artifact.Owner{User: "b", Workflow: "wf", Session: "s"}
	ownerC = artifact.Owner{User: "c", Workflow: "wf", Session: "s"}
)

// resolve is a rehydration's view of ref for owner, at the current time.
func resolve(t testing.TB, s *workspace.Store, owner artifact.Owner, ref artifact.Ref) (string, []byte) {
	t.Helper()
	oc, b, err := drivertest.Resolve(context.Background(), s, owner, ref, time.Now())
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	return oc, b
}

// attachData ingests data and attaches it for owner, now, as an offload
// does.
func attachData(ctx context.Context, s *workspace.Store, owner artifact.Owner, data []byte, stream bool) (workspace.AttachCase, error) {
	return drivertest.AttachData(ctx, s, owner, data, stream, time.Now())
}

// offloadAs stores data for owner and returns its reference.
func offloadAs(t testing.TB, s *workspace.Store, owner artifact.Owner, data []byte) artifact.Ref {
	t.Helper()
	c, err := attachData(context.Background(), s, owner, data, false)
	if err != nil || !drivertest.Acknowledged(c) {
		t.Fatalf("Attach = %v, %v", c, err)
	}
	return artifact.RefOf(data)
}

func TestGCOptionsValidated(t *testing.T) {
	s := workspace.New(memstore.New(), memstore.New())
	for _, o := range []workspace.GCOptions{
		{MaxAge: -time.Hour}, {MaxAge: 30 * time.Minute}, {Grace: -time.Hour}, {Grace: 30 * time.Second},
	} {
		if _, err := s.CollectGarbage(context.Background(), &o); !errors.Is(err, workspace.ErrGCOptions) {
			t.Errorf("CollectGarbage(%+v) = %v, want ErrGCOptions", o, err)
		}
	}
	for _, o := range []*workspace.GCOptions{nil, {MaxAge: time.Hour, Grace: time.Minute}} {
		if _, err := s.CollectGarbage(context.Background(), o); err != nil {
			t.Errorf("CollectGarbage(%+v) = %v", o, err)
		}
	}
}

// TestGCGraceBoundary: an unreferenced body is kept 30 s before the end of
// its grace period and deleted 1 s after it; a referenced one is kept.
func TestGCGraceBoundary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memstore.New()
		s := workspace.New(m, m)
		ctx := context.Background()
		orphan := mustPut(t, s, bodyOf(1, 100))
		kept := offloadAs(t, s, ownerA, bodyOf(2, 100))

		time.Sleep(gcGrace - 30*time.Second)
		rep, err := s.CollectGarbage(ctx, &workspace.GCOptions{Grace: gcGrace})
		if err != nil {
			t.Fatal(err)
		}
		want := workspace.GCReport{BodiesScanned: 2, BodiesReferenced: 1, BodiesRecent: 1}
		if rep != want {
			t.Fatalf("at grace-30s: %+v, want %+v", rep, want)
		}
		time.Sleep(31 * time.Second)
		rep, err = s.CollectGarbage(ctx, &workspace.GCOptions{Grace: gcGrace})
		if err != nil {
			t.Fatal(err)
		}
		want = workspace.GCReport{BodiesScanned: 2, BodiesDeleted: 1, BytesDeleted: 100, BodiesReferenced: 1}
		if rep != want {
			t.Fatalf("at grace+1s: %+v, want %+v", rep, want)
		}
		if _, err := s.StatBody(ctx, orphan); err == nil {
			t.Fatal("orphan survived")
		}
		if oc, b := resolve(t, s, ownerA, kept); oc != drivertest.Resolved || !bytes.Equal(b, bodyOf(2, 100)) {
			t.Fatalf("kept body: %v", oc)
		}
	})
}

// TestGCMaxAge: records unused longer than the max age go, then their
// bodies; a collected reference resolves unauthorized; a body another owner
// still uses stays; the dry run reports exactly what the real run does.
func TestGCMaxAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memstore.New()
		s := workspace.New(m, m)
		ctx := context.Background()
		old := offloadAs(t, s, ownerA, bodyOf(1, 100))
		shared := offloadAs(t, s, ownerA, bodyOf(2, 200))
		time.Sleep(20 * day)
		offloadAs(t, s, ownerB, bodyOf(2, 200)) // B uses it 20 days later
		time.Sleep(11 * day)

		opts := workspace.GCOptions{MaxAge: maxAge, DryRun: true}
		dry, err := s.CollectGarbage(ctx, &opts)
		if err != nil {
			t.Fatal(err)
		}
		want := workspace.GCReport{DryRun: true, RecordsDeleted: 2, BodiesScanned: 2, BodiesDeleted: 1,
			BytesDeleted: 100, BodiesReferenced: 1}
		if dry != want {
			t.Fatalf("dry run: %+v, want %+v", dry, want)
		}
		if n := len(storedKeys(t, m)); n != 2 {
			t.Fatalf("dry run deleted bodies: %d left", n)
		}
		// A record lookup, unlike a resolved read, is not a use.
		if _, err := s.GetRecord(ctx, ownerA, old); err != nil {
			t.Fatalf("dry run deleted a record: %v", err)
		}
		opts.DryRun = false
		rep, err := s.CollectGarbage(ctx, &opts)
		if err != nil {
			t.Fatal(err)
		}
		want.DryRun = false
		if rep != want {
			t.Fatalf("real run: %+v, want %+v", rep, want)
		}
		for _, ref := range []artifact.Ref{old, shared} {
			if oc, b := resolve(t, s, ownerA, ref); oc != drivertest.Unauthorized || b != nil {
				t.Errorf("collected reference: %v", oc)
			}
		}
		if oc, b := resolve(t, s, ownerB, shared); oc != drivertest.Resolved || !bytes.Equal(b, bodyOf(2, 200)) {
			t.Fatalf("shared body for B: %v", oc)
		}
		// Collected content offloaded again is stored again.
		if ref := offloadAs(t, s, ownerA, bodyOf(1, 100)); ref != old {
			t.Fatal("reference changed")
		}
		if oc, b := resolve(t, s, ownerA, old); oc != drivertest.Resolved || !bytes.Equal(b, bodyOf(1, 100)) {
			t.Fatalf("re-offloaded body: %v", oc)
		}
	})
}

// noLocker hides the Locker of a memstore.
type noLocker struct{ driver.Bodies }

func TestGCNeedsLocker(t *testing.T) {
	m := memstore.New()
	s := workspace.New(noLocker{m}, m)
	if _, err := s.CollectGarbage(context.Background(), nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("CollectGarbage without a Locker = %v, want ErrUnsupported", err)
	}
	unlock, err := s.LockBody(context.Background(), artifact.RefOf([]byte("x")))
	if err != nil {
		t.Fatalf("LockBody without a Locker: %v", err)
	}
	unlock()
}

func TestLockBody(t *testing.T) {
	m := memstore.New()
	s := workspace.New(m, m)
	ctx := context.Background()
	ref := artifact.RefOf([]byte("x"))
	unlock, err := s.LockBody(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.LockBody(short, ref); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second LockBody = %v, want deadline exceeded", err)
	}
	unlock()
	unlock2, err := s.LockBody(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	unlock2()
	var we *workspace.Error
	if _, err := s.LockBody(ctx, artifact.Ref{}); !errors.As(err, &we) || !errors.Is(err, workspace.ErrInvalidRef) {
		t.Fatalf("LockBody(zero) = %v", err)
	}
}

// TestGCErrors: every failing step ends GC with a *workspace.Error that
// wraps the cause, having deleted nothing it should not have.
func TestGCErrors(t *testing.T) {
	boom := errors.New("boom")
	setup := func(t *testing.T, h *drivertest.Hooks) (*workspace.Store, artifact.Ref) {
		m := memstore.New()
		in := drivertest.Instrument(m, m, h)
		s := workspace.New(in, in)
		return s, mustPut(t, s, bodyOf(9, 50))
	}
	future := func() time.Time { return time.Now().Add(2 * day) }
	t.Run("delete", func(t *testing.T) {
		s, ref := setup(t, &drivertest.Hooks{Delete: func(context.Context, string) error { return boom }})
		_, err := s.CollectGarbage(context.Background(), &workspace.GCOptions{Clock: future})
		var we *workspace.Error
		if !errors.As(err, &we) || !errors.Is(err, boom) || we.Ref != ref {
			t.Fatalf("CollectGarbage = %v", err)
		}
	})
	t.Run("stat under the lock", func(t *testing.T) {
		s, _ := setup(t, &drivertest.Hooks{Stat: func(context.Context, string) error { return boom }})
		if _, err := s.CollectGarbage(context.Background(), &workspace.GCOptions{Clock: future}); !errors.Is(err, boom) {
			t.Fatalf("CollectGarbage = %v", err)
		}
	})
	t.Run("record expiry", func(t *testing.T) {
		m := memstore.New()
		s := workspace.New(m, failingRecords{Records: m, at: "get", err: boom})
		offloadable := workspace.New(m, m)
		offloadAs(t, offloadable, ownerA, bodyOf(3, 50))
		opts := &workspace.GCOptions{MaxAge: maxAge, Clock: func() time.Time { return time.Now().Add(40 * day) }}
		if _, err := s.CollectGarbage(context.Background(), opts); !errors.Is(err, boom) {
			t.Fatalf("CollectGarbage = %v", err)
		}
		s = workspace.New(m, failingRecords{Records: m, at: "delete", err: boom})
		if _, err := s.CollectGarbage(context.Background(), opts); !errors.Is(err, boom) {
			t.Fatalf("CollectGarbage = %v", err)
		}
		s = workspace.New(m, failingRecords{Records: m, at: "list", err: boom})
		if _, err := s.CollectGarbage(context.Background(), opts); !errors.Is(err, boom) {
			t.Fatalf("CollectGarbage = %v", err)
		}
		if n := len(storedKeys(t, m)); n != 1 {
			t.Fatalf("bodies deleted after failures: %d left", n)
		}
	})
	t.Run("closed and cancelled", func(t *testing.T) {
		s, _ := setup(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.CollectGarbage(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
		_ = s.Close()
		if _, err := s.CollectGarbage(context.Background(), nil); !errors.Is(err, workspace.ErrClosed) {
			t.Fatalf("closed: %v", err)
		}
	})
}

// failingRecords fails one kind of record call with err.
type failingRecords struct {
	driver.Records
	at  string
	err error
}

func (f failingRecords) GetRecord(ctx context.Context, o artifact.Owner, r artifact.Ref) (artifact.Record, error) {
	if f.at == "get" {
		return artifact.Record{}, f.err
	}
	return f.Records.GetRecord(ctx, o, r)
}

func (f failingRecords) DeleteRecord(ctx context.Context, o artifact.Owner, r artifact.Ref) error {
	if f.at == "delete" {
		return f.err
	}
	return f.Records.DeleteRecord(ctx, o, r)
}

func (f failingRecords) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	if f.at == "list" {
		return func(yield func(artifact.Record, error) bool) { yield(artifact.Record{}, f.err) }
	}
	return f.Records.ListRecords(ctx, q)
}

// TestGCExpiryKeepsTouchedRecords: without a RecordExpirer, a record that
// was touched after the stale list was read is kept; with one, GC uses it.
func TestGCExpiryKeepsTouchedRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := memstore.New()
		s := workspace.New(m, m)
		ref := offloadAs(t, s, ownerA, bodyOf(4, 64))
		time.Sleep(40 * day)
		touching := touchAfterList{Records: m, owner: ownerA, ref: ref}
		gs := workspace.New(m, touching)
		rep, err := gs.CollectGarbage(context.Background(), &workspace.GCOptions{MaxAge: maxAge})
		if err != nil {
			t.Fatal(err)
		}
		if rep.RecordsDeleted != 0 || rep.BodiesDeleted != 0 {
			t.Fatalf("touched record collected: %+v", rep)
		}
		if oc, _ := resolve(t, s, ownerA, ref); oc != drivertest.Resolved {
			t.Fatalf("after GC: %v", oc)
		}

		exp := &expiring{Records: m}
		time.Sleep(40 * day)
		rep, err = workspace.New(m, exp).CollectGarbage(context.Background(), &workspace.GCOptions{MaxAge: maxAge})
		if err != nil || exp.calls != 1 || rep.RecordsDeleted != 1 || rep.BodiesDeleted != 1 {
			t.Fatalf("with a RecordExpirer: %+v, %v, %d calls", rep, err, exp.calls)
		}
	})
}

// touchAfterList touches one record as soon as a stale-record listing ends.
type touchAfterList struct {
	driver.Records
	owner artifact.Owner
	ref   artifact.Ref
}

func (t touchAfterList) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	return func(yield func(artifact.Record, error) bool) {
		for r, err := range t.Records.ListRecords(ctx, q) {
			if !yield(r, err) {
				return
			}
		}
		if !q.UnusedSince.IsZero() {
			_ = t.Records.TouchRecord(ctx, t.owner, t.ref, time.Now())
		}
	}
}

// expiring adds an atomic RecordExpirer to a records driver: every record
// mutation goes through mu, so the conditional delete cannot interleave with
// a touch, as in one SQL statement.
type expiring struct {
	driver.Records
	mu    sync.Mutex
	calls int
}

func (e *expiring) ExpireRecords(ctx context.Context, cutoff time.Time) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	var stale []artifact.Record
	for r, err := range e.Records.ListRecords(ctx, driver.Query{UnusedSince: cutoff}) {
		if err != nil {
			return 0, err
		}
		stale = append(stale, r)
	}
	for _, r := range stale {
		if err := e.Records.DeleteRecord(ctx, r.Owner, r.Ref); err != nil {
			return 0, err
		}
	}
	return int64(len(stale)), nil
}

func (e *expiring) TouchRecord(ctx context.Context, o artifact.Owner, r artifact.Ref, at time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.Records.TouchRecord(ctx, o, r, at)
}

func (e *expiring) CreateRecord(ctx context.Context, rec artifact.Record) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.Records.CreateRecord(ctx, rec)
}

var _ driver.RecordExpirer = (*expiring)(nil)
