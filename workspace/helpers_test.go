package workspace_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

var validOwner = artifact.Owner{User: "alice", Workflow: "wf", Session: "s1"}

// instrumented returns a Store over an Instrumented memstore, with hooks h
// (which may be nil).
func instrumented(h *drivertest.Hooks) (*workspace.Store, *drivertest.Instrumented, *memstore.Store) {
	m := memstore.New()
	in := drivertest.Instrument(m, m, h)
	return workspace.New(in, in), in, m
}

// over returns a Store over an Instrumented wrapper of b, with m as records.
func over(b driver.Bodies, m *memstore.Store, h *drivertest.Hooks) (*workspace.Store, *drivertest.Instrumented) {
	in := drivertest.Instrument(b, m, h)
	return workspace.New(in, in), in
}

func mustPut(t *testing.T, s *workspace.Store, data []byte) artifact.Ref {
	t.Helper()
	ref, _, _, err := drivertest.Put(context.Background(), s, bytes.NewReader(data), nil)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return ref
}

// bodyOf returns n bytes that differ from those of any other seed.
func bodyOf(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed ^ byte(i*7+i>>8)
	}
	return b
}

// storedKeys lists the keys committed in m.
func storedKeys(t *testing.T, m *memstore.Store) []string {
	t.Helper()
	var ks []string
	for info, err := range m.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, info.Key)
	}
	return ks
}

// restatBodies serves readers that are both RangeReader and Restatter;
// Restat reports what restat makes of the opened body's Info.
type restatBodies struct {
	*memstore.Store
	restat func(driver.Info) driver.Info
}

func (b restatBodies) Open(ctx context.Context, key string) (driver.Reader, error) {
	r, err := b.Store.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return restatReader{Reader: r, ra: r.(io.ReaderAt), restat: b.restat}, nil
}

type restatReader struct {
	driver.Reader
	ra     io.ReaderAt
	restat func(driver.Info) driver.Info
}

func (r restatReader) ReadAt(p []byte, off int64) (int, error) { return r.ra.ReadAt(p, off) }
func (r restatReader) Restat() (driver.Info, error)            { return r.restat(r.Info()), nil }

// plainBodies serves readers without optional capabilities and bodies
// without a version.
type plainBodies struct{ *memstore.Store }

func (b plainBodies) Open(ctx context.Context, key string) (driver.Reader, error) {
	r, err := b.Store.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return plainReader{r}, nil
}

func (b plainBodies) Stat(ctx context.Context, key string) (driver.Info, error) {
	info, err := b.Store.Stat(ctx, key)
	info.Version = ""
	return info, err
}

type plainReader struct{ driver.Reader }

func (r plainReader) Info() driver.Info {
	info := r.Reader.Info()
	info.Version = ""
	return info
}

// lyingBodies report every body as size bytes long, whatever it holds.
type lyingBodies struct {
	*memstore.Store
	size int64
}

func (b lyingBodies) Stat(ctx context.Context, key string) (driver.Info, error) {
	info, err := b.Store.Stat(ctx, key)
	info.Size = b.size
	return info, err
}

func (b lyingBodies) Open(ctx context.Context, key string) (driver.Reader, error) {
	r, err := b.Store.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return sizedReader{Reader: r, size: b.size}, nil
}

type sizedReader struct {
	driver.Reader
	size int64
}

func (r sizedReader) Info() driver.Info {
	info := r.Reader.Info()
	info.Size = r.size
	return info
}
