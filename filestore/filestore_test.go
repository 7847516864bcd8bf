package filestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/filestore"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

var owner = artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}

// countingIndex counts the calls that reach an Index.
type countingIndex struct {
	filestore.Index
	calls atomic.Int64
}

func (c *countingIndex) Get(ctx context.Context, o artifact.Owner, p string) (filestore.Entry, error) {
	c.calls.Add(1)
	return c.Index.Get(ctx, o, p)
}

func (c *countingIndex) Put(ctx context.Context, o artifact.Owner, e filestore.Entry) error {
	c.calls.Add(1)
	return c.Index.Put(ctx, o, e)
}

func (c *countingIndex) List(ctx context.Context, o artifact.Owner, prefix string) iter.Seq2[filestore.Entry, error] {
	c.calls.Add(1)
	return c.Index.List(ctx, o, prefix)
}

type fixture struct {
	inst  *drivertest.Instrumented
	ws    *workspace.Store
	index *countingIndex
	fs    *filestore.Store
	bind  *hybridctx.Binding
}

func newFixture(t *testing.T, opts *filestore.Options) *fixture {
	t.Helper()
	mem := memstore.New()
	f := &fixture{inst: drivertest.Instrument(mem, mem, nil), index: &countingIndex{Index: filestore.NewMemIndex()}}
	f.ws = workspace.New(f.inst, f.inst)
	f.bind, _ = hybridctx.NewBinding(owner, f.ws)
	o := filestore.Options{}
	if opts != nil {
		o = *opts
	}
	o.Index = f.index
	var err error
	if f.fs, err = filestore.New(f.bind, &o); err != nil {
		t.Fatal(err)
	}
	return f
}

// storageCalls counts every call that reached the workspace or the index.
func (f *fixture) storageCalls() int64 {
	c := f.inst.Counts()
	return f.inst.BodyCalls() + c.CreateRecords + c.GetRecords + c.TouchRecords + c.DeleteRecords + c.ListRecords + f.index.calls.Load()
}

func TestReadWriteExists(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if err := f.fs.Write(ctx, "./kb/notes.md", []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := f.fs.Write(ctx, `kb\notes.md`, []byte("second")); err != nil {
		t.Fatal(err)
	}
	got, err := f.fs.Read(ctx, " kb//notes.md ")
	if err != nil || string(got) != "second" {
		t.Fatalf("read %q, %v", got, err)
	}
	if ok, err := f.fs.Exists(ctx, "kb/notes.md"); !ok || err != nil {
		t.Fatal("exists")
	}
	if ok, err := f.fs.Exists(ctx, "KB/notes.md"); ok || err != nil {
		t.Fatal("paths are case-sensitive")
	}
	if _, err := f.fs.Read(ctx, "kb/other.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	if err := f.fs.Write(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := f.fs.Read(ctx, "empty"); err != nil || len(got) != 0 {
		t.Fatalf("empty file: %q %v", got, err)
	}
}

func TestNotASecondAuthority(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	body := strings.Repeat("artifact body ", 100)
	if err := f.fs.Write(ctx, "big.txt", []byte(body)); err != nil {
		t.Fatal(err)
	}
	// No record: not listed, not readable as an artifact, not an existing
	// reference to the offloader.
	for rec, err := range f.ws.ListRecords(ctx, driver.Query{}) {
		t.Fatalf("a record appeared: %v %v", rec.Ref, err)
	}
	reh, _ := hybridctx.NewRehydrator(f.bind, nil)
	r, err := reh.Rehydrate(ctx, hybridctx.Request{Reference: artifact.RefOf([]byte(body)).String(), Budget: 1 << 20})
	if err != nil || r.Outcome() != hybridctx.Unauthorized {
		t.Fatalf("read_artifact of a file: %v %v", r.Outcome(), err)
	}
	off, _ := hybridctx.NewOffloader(f.bind, hybridctx.Policy{InlineThreshold: 16}, nil)
	out, err := off.Offload(ctx, hybridctx.Call{}, body)
	if err != nil || out.Outcome() != hybridctx.Offloaded {
		t.Fatalf("offload of a file's content: %v %v", out.Outcome(), err)
	}
	// And an artifact is no file.
	if ok, _ := f.fs.Exists(ctx, "sha256/"+out.Ref.Hex()); ok {
		t.Fatal("an artifact body is visible as a file")
	}
}

func TestReservedNamespace(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	_ = f.fs.Write(ctx, "notes/a.md", []byte("a"))
	for _, p := range []string{"sha256/" + strings.Repeat("a", 64), "SHA256/x", "records.db", "records.db-wal", "locks/x", ".hybridctx/records.db",
		"artifact://sha256/" + strings.Repeat("b", 64), ".tmp-1"} {
		before := f.storageCalls()
		if err := f.fs.Write(ctx, p, []byte("x")); !errors.Is(err, filestore.ErrReserved) || !errors.Is(err, fs.ErrPermission) {
			t.Errorf("write %q: %v", p, err)
		}
		if _, err := f.fs.Read(ctx, p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("read %q: %v", p, err)
		}
		if ok, err := f.fs.Exists(ctx, p); ok || err != nil {
			t.Errorf("exists %q: %v %v", p, ok, err)
		}
		if err := f.fs.CreateDir(ctx, p); !errors.Is(err, filestore.ErrReserved) {
			t.Errorf("mkdir %q: %v", p, err)
		}
		if l, err := f.fs.List(ctx, p); len(l) != 0 || err != nil {
			t.Errorf("list %q: %v %v", p, l, err)
		}
		if f.storageCalls() != before {
			t.Errorf("%q reached storage", p)
		}
	}
	// Entries planted in the index under reserved names stay invisible.
	_ = f.index.Put(ctx, owner, filestore.Entry{Path: "sha256/planted", Ref: artifact.RefOf(nil)})
	l, err := f.fs.List(ctx, "")
	if err != nil || len(l) != 1 || l[0].Name != "notes" {
		t.Fatalf("root listing %+v %v", l, err)
	}
}

func TestList(t *testing.T) {
	f := newFixture(t, &filestore.Options{ListCap: 4})
	ctx := context.Background()
	for _, p := range []string{"b.md", "a.md", "z/1", "y/2", "y/3/4", "b.md/inner"} {
		if err := f.fs.Write(ctx, p, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := f.fs.List(ctx, "/")
	if !errors.Is(err, filestore.ErrInvalidPath) || l != nil {
		t.Fatalf("rooted directory: %v %v", l, err)
	}
	// The root has b.md/, y/, z/, a.md, b.md: five children, over the cap.
	if l, err = f.fs.List(ctx, "."); !errors.Is(err, filestore.ErrListCap) || l != nil {
		t.Fatalf("over the cap: %v %v", l, err)
	}
	l, err = f.fs.List(ctx, "y")
	want := []filestore.DirEntry{{Name: "3", Path: "y/3", IsDir: true}, {Name: "2", Path: "y/2", Size: 3}}
	if err != nil || fmt.Sprint(l) != fmt.Sprint(want) {
		t.Fatalf("list y: %+v %v", l, err)
	}
	f2 := newFixture(t, &filestore.Options{ListCap: 5})
	for _, p := range []string{"b.md", "a.md", "z/1", "y/2", "y/3/4", "b.md/inner"} {
		_ = f2.fs.Write(ctx, p, []byte(p))
	}
	l, err = f2.fs.List(ctx, "")
	names := []string{}
	for _, e := range l {
		names = append(names, e.Path)
	}
	if err != nil || strings.Join(names, ",") != "b.md,y,z,a.md,b.md" {
		t.Fatalf("at the cap: %v %v", names, err)
	}
	if l, err := f2.fs.List(ctx, "nothing/here"); err != nil || len(l) != 0 {
		t.Fatalf("empty directory: %v %v", l, err)
	}
}

func TestUnsupportedAfterValidation(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	_ = f.fs.Write(ctx, "a.md", []byte("a"))
	before := f.storageCalls()
	if err := f.fs.Delete(ctx, "a.md"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatal(err)
	}
	if err := f.fs.Delete(ctx, "../a.md"); !errors.Is(err, filestore.ErrInvalidPath) {
		t.Fatalf("delete of a bad path: %v", err)
	}
	if err := f.fs.Search(ctx, "docs", "TODO"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatal(err)
	}
	if err := f.fs.Search(ctx, "/root", "TODO"); !errors.Is(err, filestore.ErrInvalidPath) {
		t.Fatalf("search of a rooted directory: %v", err)
	}
	if err := f.fs.CreateDir(ctx, "new/dir"); err != nil {
		t.Fatal(err)
	}
	if err := f.fs.CreateDir(ctx, `C:\x`); !errors.Is(err, filestore.ErrInvalidPath) {
		t.Fatal(err)
	}
	if f.storageCalls() != before {
		t.Fatal("delete, search or create-directory reached storage")
	}
	if ok, _ := f.fs.Exists(ctx, "a.md"); !ok {
		t.Fatal("delete deleted")
	}
	if l, _ := f.fs.List(ctx, "new"); len(l) != 0 {
		t.Fatal("an empty directory is listed")
	}
}

func TestBadInputBeforeStorage(t *testing.T) {
	f := newFixture(t, nil)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	ops := map[string]func(ctx context.Context, p string) error{
		"read":   func(ctx context.Context, p string) error { _, err := f.fs.Read(ctx, p); return err },
		"write":  func(ctx context.Context, p string) error { return f.fs.Write(ctx, p, []byte("x")) },
		"exists": func(ctx context.Context, p string) error { _, err := f.fs.Exists(ctx, p); return err },
		"list":   func(ctx context.Context, p string) error { _, err := f.fs.List(ctx, p); return err },
		"mkdir":  func(ctx context.Context, p string) error { return f.fs.CreateDir(ctx, p) },
		"delete": func(ctx context.Context, p string) error { return f.fs.Delete(ctx, p) },
		"search": func(ctx context.Context, p string) error { return f.fs.Search(ctx, p, "x") },
	}
	for name, op := range ops {
		if err := op(cancelled, "a/b.md"); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", name, err)
		}
		for _, p := range []string{"/etc/passwd", `C:\x`, `\\server\share\x`, "../x", "a/../../x", "a\x00b"} {
			if err := op(context.Background(), p); !errors.Is(err, filestore.ErrInvalidPath) {
				t.Errorf("%s %q: %v", name, p, err)
			}
		}
	}
	if n := f.storageCalls(); n != 0 {
		t.Fatalf("%d storage calls", n)
	}
	for _, p := range []string{"", " ", "."} {
		if err := f.fs.Write(context.Background(), p, []byte("x")); !errors.Is(err, filestore.ErrInvalidPath) {
			t.Errorf("write to the root %q: %v", p, err)
		}
	}
}

func TestLimitsAndIntegrity(t *testing.T) {
	f := newFixture(t, &filestore.Options{MaxFileBytes: 10})
	ctx := context.Background()
	if err := f.fs.Write(ctx, "big", make([]byte, 11)); !errors.Is(err, filestore.ErrTooLarge) {
		t.Fatal(err)
	}
	if err := f.fs.Write(ctx, "ok", []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	if !f.inst.Tamper(artifact.RefOf([]byte("0123456789")).Hex(), []byte("9876543210")) {
		t.Fatal("cannot tamper")
	}
	if b, err := f.fs.Read(ctx, "ok"); !errors.Is(err, workspace.ErrCorrupt) || b != nil {
		t.Fatalf("corrupt body: %q %v", b, err)
	}
	if _, err := filestore.New(nil, nil); !errors.Is(err, hybridctx.ErrNoWorkspace) {
		t.Fatal(err)
	}
	if _, err := filestore.New(f.bind, &filestore.Options{ListCap: -1}); !errors.Is(err, filestore.ErrInvalidOptions) {
		t.Fatal(err)
	}
	if s, _ := filestore.New(f.bind, nil); s.ListCap() != filestore.DefaultListCap {
		t.Fatal("default cap")
	}
}

func TestOwnersAreSeparate(t *testing.T) {
	mem := memstore.New()
	ws := workspace.New(mem, mem)
	index := filestore.NewMemIndex()
	mine, _ := hybridctx.NewBinding(owner, ws)
	theirs, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s2"}, ws)
	a, _ := filestore.New(mine, &filestore.Options{Index: index})
	b, _ := filestore.New(theirs, &filestore.Options{Index: index})
	ctx := context.Background()
	_ = a.Write(ctx, "secret.md", []byte("mine"))
	if ok, _ := b.Exists(ctx, "secret.md"); ok {
		t.Fatal("another session sees the file")
	}
	if l, _ := b.List(ctx, ""); len(l) != 0 {
		t.Fatal("another session lists the file")
	}
}

func TestConcurrentWrites(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	values := map[string]bool{}
	for i := range 32 {
		values[string(bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i))] = true
	}
	for i := range 32 {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.fs.Write(ctx, "same.md", v); err != nil {
				t.Error(err)
			}
			if got, err := f.fs.Read(ctx, "same.md"); err != nil || !values[string(got)] {
				t.Errorf("torn read: %d bytes, %v", len(got), err)
			}
		}()
	}
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("own/%d.md", i)
			if err := f.fs.Write(ctx, p, []byte(p)); err != nil {
				t.Error(err)
			}
			if got, err := f.fs.Read(ctx, p); err != nil || string(got) != p {
				t.Errorf("%s: %q %v", p, got, err)
			}
		}()
	}
	wg.Wait()
	if got, err := f.fs.Read(ctx, "same.md"); err != nil || !values[string(got)] {
		t.Fatalf("final value: %d bytes, %v", len(got), err)
	}
}
