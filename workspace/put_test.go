package workspace_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

var errInjected = errors.New("injected fault")

func TestPutWithFailingWriter(t *testing.T) {
	ctx := context.Background()
	writes := 0
	h := &drivertest.Hooks{Write: func(p []byte) error {
		// Let the first chunk through, so bytes were written before the
		// failure.
		if writes++; writes == 2 {
			return errInjected
		}
		return nil
	}}
	s, in, m := instrumented(h)
	data := bodyOf(6, 1<<20)
	ref, n, res, err := drivertest.Put(ctx, s, bytes.NewReader(data), nil)
	if !errors.Is(err, errInjected) || asError(t, err).Op != "put" {
		t.Fatalf("Put with a failing writer: %v, want a put error wrapping the fault", err)
	}
	if !ref.IsZero() || n != 0 || res != 0 {
		t.Fatalf("Put with a failing writer returned %v, %d, %v", ref, n, res)
	}
	c := in.Counts()
	if c.Aborts != 1 || c.Commits != 0 || c.BytesWritten == 0 {
		t.Fatalf("after a failing write: %+v; want 1 abort, 0 commits, some bytes written", c)
	}
	if ks := storedKeys(t, m); len(ks) != 0 {
		t.Fatalf("a failed Put left %d bodies", len(ks))
	}
	// The next Put of the same bytes is unaffected.
	if _, _, res, err := drivertest.Put(ctx, s, bytes.NewReader(data), nil); err != nil || res != workspace.Created {
		t.Fatalf("Put after a failed one = %v, %v; want created", res, err)
	}
}

func TestPutWithFailingCommit(t *testing.T) {
	ctx := context.Background()
	h := &drivertest.Hooks{Commit: func(context.Context, string, bool) error { return errInjected }}
	s, in, m := instrumented(h)
	data := []byte("never committed")
	ref, _, _, err := drivertest.Put(ctx, s, bytes.NewReader(data), nil)
	if !errors.Is(err, errInjected) || asError(t, err).Ref != artifact.RefOf(data) {
		t.Fatalf("Put with a failing commit: %v (ref %v)", err, ref)
	}
	if c := in.Counts(); c.Aborts != 1 || c.Commits != 0 {
		t.Fatalf("after a failing commit: %+v; want the writer aborted", c)
	}
	if ks := storedKeys(t, m); len(ks) != 0 {
		t.Fatalf("a failed commit left %d bodies", len(ks))
	}
}

// failingReader yields n bytes, then err.
type failingReader struct {
	n   int
	err error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, r.err
	}
	m := min(len(p), r.n)
	clear(p[:m])
	r.n -= m
	return m, nil
}

func TestIngestReturnsReadErrorUnwrapped(t *testing.T) {
	ctx := context.Background()
	s, in, m := instrumented(nil)
	p, n, err := s.Ingest(ctx, &failingReader{n: 100, err: errInjected}, nil)
	if err != errInjected {
		t.Fatalf("Ingest with a failing source: %v (%T), want the source's error itself", err, err)
	}
	if p != nil || n != 100 {
		t.Fatalf("Ingest with a failing source = %v, %d; want nil, 100", p, n)
	}
	if c := in.Counts(); c.Aborts != 1 || c.NewWriters != 1 {
		t.Fatalf("after a failing source: %+v; want the writer aborted", c)
	}
	if ks := storedKeys(t, m); len(ks) != 0 {
		t.Fatalf("a failed Ingest left %d bodies", len(ks))
	}
	// A source error that happens to be io.ErrUnexpectedEOF is kept too.
	if _, _, _, err := drivertest.Put(ctx, s, &failingReader{n: 5, err: io.ErrUnexpectedEOF}, nil); err != io.ErrUnexpectedEOF {
		t.Fatalf("Put with a truncated source: %v", err)
	}
}

func TestIngestObserverSeesEveryByte(t *testing.T) {
	s, _, _ := instrumented(nil)
	data := bodyOf(7, 700_000)
	var seen bytes.Buffer
	ref, _, _, err := drivertest.Put(context.Background(), s, bytes.NewReader(data), &workspace.IngestOptions{Observer: &seen})
	if err != nil || ref != artifact.RefOf(data) {
		t.Fatalf("Put: %v", err)
	}
	if !bytes.Equal(seen.Bytes(), data) {
		t.Fatalf("observer saw %d bytes, not the %d written", seen.Len(), len(data))
	}
}

func TestCommitReportedWhenContextEndsAfterIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &drivertest.Hooks{AfterCommit: func(context.Context, string, bool) { cancel() }}
	s, _, m := instrumented(h)
	data := []byte("durable before the cancel")
	ref, _, res, err := drivertest.Put(ctx, s, bytes.NewReader(data), nil)
	if err != nil || res != workspace.Created {
		t.Fatalf("Put cancelled just after its commit = %v, %v; want created", res, err)
	}
	if _, err := m.Stat(context.Background(), ref.Hex()); err != nil {
		t.Fatalf("committed body: %v", err)
	}
}

func TestCreateRecordTruncatesDescription(t *testing.T) {
	ctx := context.Background()
	s, _, m := instrumented(nil)
	ref := artifact.RefOf([]byte("described"))
	cases := []struct{ desc, want string }{
		{strings.Repeat("a", 500), strings.Repeat("a", 500)},
		{strings.Repeat("a", 499) + "é", strings.Repeat("a", 499)},
		{strings.Repeat("a", 498) + "😀", strings.Repeat("a", 498)},
		{strings.Repeat("é", 300), strings.Repeat("é", 250)},
		{strings.Repeat("a", 10_000), strings.Repeat("a", 500)},
	}
	for i, c := range cases {
		owner := validOwner
		owner.Session = string(rune('a' + i))
		created, err := s.CreateRecord(ctx, artifact.Record{Owner: owner, Ref: ref, Description: c.desc})
		if err != nil || !created {
			t.Fatalf("CreateRecord: %v, %v", created, err)
		}
		got, err := m.GetRecord(ctx, owner, ref)
		if err != nil {
			t.Fatal(err)
		}
		if got.Description != c.want || !utf8.ValidString(got.Description) || len(got.Description) > artifact.MaxDescriptionLen {
			t.Errorf("case %d: stored description of %d bytes, want %d", i, len(got.Description), len(c.want))
		}
	}
}

func TestCreateRecordNormalizes(t *testing.T) {
	ctx := context.Background()
	s, in, m := instrumented(nil)
	ref := artifact.RefOf([]byte("normalized"))
	zone := time.FixedZone("east", 5*3600)
	at := time.Date(2025, 6, 1, 9, 0, 0, 0, zone)
	if _, err := s.CreateRecord(ctx, artifact.Record{Owner: validOwner, Ref: ref, CreatedAt: at, LastUsedAt: at}); err != nil {
		t.Fatal(err)
	}
	got, _ := m.GetRecord(ctx, validOwner, ref)
	if got.CreatedAt.Location() != time.UTC || got.LastUsedAt.Location() != time.UTC || !got.CreatedAt.Equal(at) {
		t.Fatalf("stored times %v / %v, want %v in UTC", got.CreatedAt, got.LastUsedAt, at)
	}
	if err := s.TouchRecord(ctx, validOwner, ref, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, _ = m.GetRecord(ctx, validOwner, ref)
	if got.LastUsedAt.Location() != time.UTC {
		t.Fatalf("touched time %v is not UTC", got.LastUsedAt)
	}
	in.Reset()
	other := validOwner
	other.Session = "other"
	if _, err := s.CreateRecord(ctx, artifact.Record{Owner: other, Ref: ref, Size: -1}); err == nil {
		t.Fatal("CreateRecord with a negative size succeeded")
	}
	if c := in.Counts(); c.CreateRecords != 0 {
		t.Fatalf("a record with a negative size reached the driver")
	}
}
