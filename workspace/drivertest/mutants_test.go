package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// mutant is a memstore with one deliberate contract violation, to show that
// the suite catches it.
type mutant struct {
	*memstore.Store
	kind string
}

func (m *mutant) is(kind string) bool { return m.kind == kind }

// mapErr gives the error-mapping mutants their wrong mapping: an absent
// body or record, or a taken key, reported with the io/fs sentinel alone
// (no portable category), or also marked with a second category.
func (m *mutant) mapErr(err error) error {
	switch {
	case m.is("unmarked-not-found") && errors.Is(err, driver.ErrNotFound):
		return fmt.Errorf("mutant: %w", fs.ErrNotExist)
	case m.is("unmarked-exists") && errors.Is(err, driver.ErrAlreadyExists):
		return fmt.Errorf("mutant: %w", fs.ErrExist)
	case m.is("not-found-also-unavailable") && errors.Is(err, driver.ErrNotFound):
		return driver.Wrap(driver.ErrUnavailable, err)
	}
	return err
}

// ctx drops cancellation for the ignores-cancel mutant.
func (m *mutant) ctx(ctx context.Context) context.Context {
	if m.is("ignores-cancel") {
		return context.Background()
	}
	return ctx
}

func (m *mutant) NewWriter(ctx context.Context) (driver.Writer, error) {
	w, err := m.Store.NewWriter(m.ctx(ctx))
	if err != nil {
		return nil, err
	}
	return &mutantWriter{Writer: w, m: m}, nil
}

type mutantWriter struct {
	driver.Writer
	m *mutant
}

func (w *mutantWriter) Commit(ctx context.Context, key string, replace bool) error {
	if w.m.is("commit-overwrites") {
		replace = true
	}
	return w.m.mapErr(w.Writer.Commit(w.m.ctx(ctx), key, replace))
}

func (m *mutant) Open(ctx context.Context, key string) (driver.Reader, error) {
	r, err := m.Store.Open(m.ctx(ctx), key)
	if err != nil || !m.is("torn-reads") {
		return r, m.mapErr(err)
	}
	half := r.Info().Size / 2
	return tornReader{Reader: io.LimitReader(r, half), r: r}, nil
}

type tornReader struct {
	io.Reader
	r driver.Reader
}

func (t tornReader) Close() error      { return t.r.Close() }
func (t tornReader) Info() driver.Info { return t.r.Info() }

func (m *mutant) Stat(ctx context.Context, key string) (driver.Info, error) {
	info, err := m.Store.Stat(m.ctx(ctx), key)
	return info, m.mapErr(err)
}

func (m *mutant) Delete(ctx context.Context, key string) error {
	if m.is("delete-noop") {
		_, err := m.Store.Stat(ctx, key)
		return err
	}
	return m.mapErr(m.Store.Delete(m.ctx(ctx), key))
}

func (m *mutant) List(ctx context.Context) iter.Seq2[driver.Info, error] {
	return m.Store.List(m.ctx(ctx))
}

func (m *mutant) Lock(ctx context.Context, key string) (func() error, error) {
	if m.is("no-lock") {
		return func() error { return nil }, nil
	}
	return m.Store.Lock(ctx, key)
}

// owner joins the fields without a separator for the owner-concat mutant.
func (m *mutant) owner(o artifact.Owner) artifact.Owner {
	if m.is("owner-concat") {
		return artifact.Owner{User: o.User + o.Workflow + o.Session, Workflow: "-", Session: "-"}
	}
	return o
}

func (m *mutant) CreateRecord(ctx context.Context, rec artifact.Record) (bool, error) {
	ctx = m.ctx(ctx)
	if m.is("racy-create") {
		if _, err := m.Store.GetRecord(ctx, rec.Owner, rec.Ref); err == nil {
			return false, nil
		}
		time.Sleep(time.Millisecond)
		_, err := m.Store.CreateRecord(ctx, rec)
		return err == nil, err
	}
	rec.Owner = m.owner(rec.Owner)
	return m.Store.CreateRecord(ctx, rec)
}

func (m *mutant) GetRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) (artifact.Record, error) {
	rec, err := m.Store.GetRecord(m.ctx(ctx), m.owner(owner), ref)
	rec.Owner = owner
	return rec, m.mapErr(err)
}

func (m *mutant) TouchRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref, at time.Time) error {
	if m.is("touch-noop") {
		_, err := m.Store.GetRecord(ctx, owner, ref)
		return err
	}
	return m.mapErr(m.Store.TouchRecord(m.ctx(ctx), m.owner(owner), ref, at))
}

func (m *mutant) DeleteRecord(ctx context.Context, owner artifact.Owner, ref artifact.Ref) error {
	return m.mapErr(m.Store.DeleteRecord(m.ctx(ctx), m.owner(owner), ref))
}

func (m *mutant) ListRecords(ctx context.Context, q driver.Query) iter.Seq2[artifact.Record, error] {
	if q.Owner != nil {
		o := m.owner(*q.Owner)
		q.Owner = &o
	}
	seq := m.Store.ListRecords(m.ctx(ctx), q)
	if !m.is("list-reversed") {
		return seq
	}
	return func(yield func(artifact.Record, error) bool) {
		var recs []artifact.Record
		for r, err := range seq {
			if err != nil {
				yield(r, err)
				return
			}
			recs = append(recs, r)
		}
		slices.Reverse(recs)
		for _, r := range recs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

const mutantEnv = "DRIVERTEST_MUTANT"

// TestMutantHelper runs the suite over the mutant named by the environment;
// it does nothing in an ordinary run.
func TestMutantHelper(t *testing.T) {
	kind := os.Getenv(mutantEnv)
	if kind == "" {
		t.Skip("only run by TestSuiteCatchesMutants")
	}
	Run(t, func(t *testing.T) (driver.Bodies, driver.Records) {
		m := &mutant{Store: memstore.New(), kind: kind}
		return m, m
	})
}

// TestSuiteCatchesMutants runs one subtest per mutant in a child process and
// checks that it fails; the "none" mutant checks that the same subtest passes
// on a correct backend.
func TestSuiteCatchesMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	cases := []struct{ kind, subtest string }{
		{"none", "PutCreatedThenExisting"},
		{"commit-overwrites", "PutCreatedThenExisting"},
		{"commit-overwrites", "CommitExistThenReplace"},
		{"commit-overwrites", "ConcurrentPutSameContent"},
		{"torn-reads", "ReadVerifiedRanges"},
		{"torn-reads", "ReadersDuringWrites"},
		{"ignores-cancel", "CancelledContextDriver"},
		{"none", "CancelledContextDriver"},
		{"delete-noop", "DeleteBody"},
		{"no-lock", "Locker"},
		{"owner-concat", "OwnersDistinct"},
		{"racy-create", "ConcurrentCreateRecord"},
		{"touch-noop", "RecordTouch"},
		{"list-reversed", "ListRecordsOrder"},
		{"list-reversed", "ListRecordsFilters"},
		{"none", "ListRecordsFilters"},
		{"unmarked-not-found", "AbsentBody"},
		{"unmarked-not-found", "RecordAbsent"},
		{"not-found-also-unavailable", "AbsentBody"},
		{"not-found-also-unavailable", "RecordAbsent"},
		{"none", "AbsentBody"},
		{"none", "RecordAbsent"},
		{"unmarked-exists", "CommitExistThenReplace"},
		{"none", "CommitExistThenReplace"},
	}
	for _, c := range cases {
		t.Run(c.kind+"/"+c.subtest, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0],
				"-test.run=^TestMutantHelper$/^"+c.subtest+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), mutantEnv+"="+c.kind)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			failed := strings.Contains(out.String(), "--- FAIL: TestMutantHelper/"+c.subtest)
			passed := strings.Contains(out.String(), "--- PASS: TestMutantHelper/"+c.subtest)
			if c.kind == "none" {
				if err != nil || !passed {
					t.Fatalf("correct backend: %v\n%s", err, out.String())
				}
				return
			}
			if err == nil || !failed {
				t.Fatalf("mutant %s passed %s: %v\n%s", c.kind, c.subtest, err, out.String())
			}
		})
	}
}
