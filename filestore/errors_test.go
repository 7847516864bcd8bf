package filestore_test

import (
	"context"
	"errors"
	"iter"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/filestore"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// brokenIndex fails every call.
type brokenIndex struct{ err error }

func (b brokenIndex) Get(context.Context, artifact.Owner, string) (filestore.Entry, error) {
	return filestore.Entry{}, b.err
}
func (b brokenIndex) Put(context.Context, artifact.Owner, filestore.Entry) error { return b.err }
func (b brokenIndex) List(context.Context, artifact.Owner, string) iter.Seq2[filestore.Entry, error] {
	return func(yield func(filestore.Entry, error) bool) { yield(filestore.Entry{}, b.err) }
}

func TestStorageErrors(t *testing.T) {
	ctx := context.Background()
	diskFull := errors.New("disk full")
	mem := memstore.New()
	inst := drivertest.Instrument(mem, mem, &drivertest.Hooks{
		NewWriter: func(context.Context) error { return diskFull },
		Open:      func(context.Context, string) error { return diskFull },
	})
	bind, _ := hybridctx.NewBinding(owner, workspace.New(inst, inst))
	index := filestore.NewMemIndex()
	s, _ := filestore.New(bind, &filestore.Options{Index: index})
	if err := s.Write(ctx, "a", []byte("x")); !errors.Is(err, diskFull) {
		t.Fatalf("write: %v", err)
	}
	if ok, _ := s.Exists(ctx, "a"); ok {
		t.Fatal("a failed write left a name")
	}
	_ = index.Put(ctx, owner, filestore.Entry{Path: "a", Ref: artifact.RefOf([]byte("x")), Size: 1})
	if _, err := s.Read(ctx, "a"); !errors.Is(err, diskFull) {
		t.Fatalf("read: %v", err)
	}

	broken, _ := filestore.New(bind, &filestore.Options{Index: brokenIndex{diskFull}})
	if _, err := broken.Exists(ctx, "a"); !errors.Is(err, diskFull) {
		t.Fatalf("exists: %v", err)
	}
	if _, err := broken.List(ctx, ""); !errors.Is(err, diskFull) {
		t.Fatalf("list: %v", err)
	}
	if _, err := broken.Read(ctx, "a"); !errors.Is(err, diskFull) {
		t.Fatalf("read: %v", err)
	}
}

func TestMemIndex(t *testing.T) {
	x := filestore.NewMemIndex()
	ctx := context.Background()
	for _, p := range []string{"a/1", "a/2", "b"} {
		if err := x.Put(ctx, owner, filestore.Entry{Path: p}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for e, err := range x.List(ctx, owner, "a/") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Path)
		break // stopping early is fine
	}
	if len(got) != 1 || got[0] != "a/1" {
		t.Fatalf("got %v", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := x.Get(cancelled, owner, "b"); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := x.Put(cancelled, owner, filestore.Entry{Path: "c"}); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for _, err := range x.List(cancelled, owner, "") {
		if !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
}
