package dirstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
)

func TestIntegrityAndReferenceScan(t *testing.T) {
	ctx := context.Background()
	s := openNew(t)
	if d, err := s.CheckIntegrity(ctx); err != nil || len(d) != 0 {
		t.Fatalf("fresh database: %v, %v", d, err)
	}
	want := map[string]time.Time{}
	for i := range 50 {
		data := []byte{byte(i), 'x'}
		used := time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC)
		rec := artifact.Record{Owner: artifact.Owner{User: "u", Workflow: "w", Session: "s"}, Ref: artifact.RefOf(data),
			Size: 2, Kind: "binary", CreatedAt: used, LastUsedAt: used}
		if _, err := s.CreateRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
		want[rec.Ref.Hex()] = used
	}
	got := map[string]time.Time{}
	for ref, err := range s.ScanReferences(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got[ref.Key] = ref.LastUsedAt
	}
	if len(got) != len(want) {
		t.Fatalf("scan yielded %d records, want %d", len(got), len(want))
	}
	for k, w := range want {
		if !got[k].Equal(w) {
			t.Fatalf("scan: %s last used %v, want %v", k[:8], got[k], w)
		}
	}
	if d, err := s.CheckIntegrity(ctx); err != nil || len(d) != 0 {
		t.Fatalf("sound database: %v, %v", d, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.CheckIntegrity(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled check: %v", err)
	}
}

func TestMustExist(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ws")
	if _, err := dirstore.Open(ctx, dir, &dirstore.Options{MustExist: true}); !errors.Is(err, dirstore.ErrNoWorkspace) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of nothing: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("MustExist created the directory: %v", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := dirstore.Open(ctx, dir, &dirstore.Options{MustExist: true}); !errors.Is(err, dirstore.ErrNoWorkspace) {
		t.Fatalf("Open of an empty directory: %v", err)
	}
	_ = openAt(t, dir).Close()
	s, err := dirstore.Open(ctx, dir, &dirstore.Options{MustExist: true})
	if err != nil {
		t.Fatalf("Open of a workspace: %v", err)
	}
	_ = s.Close()
}
