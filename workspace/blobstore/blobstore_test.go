package blobstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/blobstore"
	"github.com/hybridctx/hybridctx/workspace/blobstore/blobtest"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

const mib = 1 << 20

func content(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 9))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// wantObjects checks the exact object keys under the store's prefix.
func wantObjects(t *testing.T, u string, want ...string) {
	t.Helper()
	got := blobtest.Keys(t, u)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("objects %v, want %v", got, want)
	}
}

// TestStreamedBodies stores bodies past the in-memory spool: they stream to
// an upload object and are published create-only, then repaired in place.
func TestStreamedBodies(t *testing.T) {
	s, idx, u := openNew(t, nil)
	ctx := context.Background()
	st := workspace.New(s, idx)
	data := content(1, blobstore.DefaultSpoolBytes+3*mib+17)
	size := int64(len(data))
	ref, _, res, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil)
	if err != nil || res != workspace.Created || ref != artifact.RefOf(data) {
		t.Fatalf("Put = %v, %v, %v", ref, res, err)
	}
	if _, _, res, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil); err != nil || res != workspace.Existing {
		t.Fatalf("second Put = %v, %v; want existing", res, err)
	}
	wantObjects(t, u, "sha256/"+ref.Hex())
	blobtest.Tamper(t, u, ref.Hex(), bytes.Repeat([]byte{'x'}, len(data)))
	if err := st.VerifyBody(ctx, ref, size); !errors.Is(err, workspace.ErrCorrupt) {
		t.Fatalf("VerifyBody of a tampered body: %v", err)
	}
	if _, _, res, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil); err != nil || res != workspace.Replaced {
		t.Fatalf("Put over a tampered body = %v, %v; want replaced", res, err)
	}
	var buf bytes.Buffer
	if n, err := st.CopyVerified(ctx, ref, size, mib-3, 2*mib, &buf); err != nil || n != 2*mib || !bytes.Equal(buf.Bytes(), data[mib-3:3*mib-3]) {
		t.Fatalf("CopyVerified after the repair = %d, %v", n, err)
	}
	wantObjects(t, u, "sha256/"+ref.Hex())
}

// TestWriterAbort checks that an aborted streamed writer leaves nothing, and
// that a create-only commit of a present body keeps the writer's upload
// until it is aborted.
func TestWriterAbort(t *testing.T) {
	s, _, u := openNew(t, &blobstore.Options{SpoolBytes: 1024})
	ctx := context.Background()
	data := content(2, 3*mib)
	key := artifact.RefOf(data).Hex()
	w, err := s.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	wantObjects(t, u)
	for i := range 2 {
		w, err := s.NewWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		err = w.Commit(ctx, key, false)
		if i == 0 && err != nil {
			t.Fatalf("first Commit: %v", err)
		}
		if i == 1 {
			if !errors.Is(err, fs.ErrExist) {
				t.Fatalf("second Commit: %v, want fs.ErrExist", err)
			}
			if len(blobtest.Keys(t, u)) != 2 {
				t.Fatalf("the refused writer's upload is gone before Abort: %v", blobtest.Keys(t, u))
			}
			if err := w.Abort(); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantObjects(t, u, "sha256/"+key)
	if err := s.Delete(ctx, "not-a-key"); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("Delete of a malformed key: %v", err)
	}
}

// TestTooLarge checks the configured size limit on both write paths.
func TestTooLarge(t *testing.T) {
	for _, spool := range []int{1 << 20, 100} {
		s, idx, u := openNew(t, &blobstore.Options{MaxBodyBytes: 1000, SpoolBytes: spool})
		st := workspace.New(s, idx)
		_, _, _, err := drivertest.Put(context.Background(), st, bytes.NewReader(content(3, 1001)), nil)
		if !errors.Is(err, workspace.ErrTooLarge) {
			t.Fatalf("Put over the limit: %v, want ErrTooLarge", err)
		}
		wantObjects(t, u)
	}
	if _, err := blobstore.New(nil, nil); err == nil {
		t.Fatal("New(nil) succeeded")
	}
}

// freeEndpoint returns an http URL on which nothing listens.
func freeEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

// TestOpenBucketErrors checks unreachable servers, missing buckets, wrong
// credentials and bad URLs: one clear error naming the bucket, never the
// secret.
func TestOpenBucketErrors(t *testing.T) {
	base := blobtest.ServerURL(t)
	ctx := context.Background()
	p, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	missing := *p
	missing.Host = "no-such-bucket-here"
	cases := []struct {
		name, url, secret string
		want              error
		says              string
	}{
		{"missing bucket", missing.String(), "", driver.ErrUnavailable, "no such bucket"},
		{"wrong secret", base, "wrong-secret-marker-123", driver.ErrUnavailable, "credentials"},
		{"unreachable", blobtest.WithParam(t, base, "endpoint", freeEndpoint(t)), "", driver.ErrUnavailable, "cannot reach"},
		{"unknown parameter", blobtest.WithParam(t, base, "colour", "red"), "", blobstore.ErrInvalidURL, "colour"},
		{"no bucket", "s3://?region=x", "", blobstore.ErrInvalidURL, ""},
		{"unregistered scheme", "gs://bucket", "", blobstore.ErrInvalidURL, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.secret != "" {
				t.Setenv("AWS_SECRET_ACCESS_KEY", c.secret)
			}
			b, err := blobstore.OpenBucket(ctx, c.url)
			if err == nil {
				b.Close()
				t.Fatal("OpenBucket succeeded")
			}
			msg := err.Error()
			t.Log(msg)
			if !errors.Is(err, c.want) || !strings.Contains(msg, c.says) {
				t.Fatalf("error %q, want %v saying %q", msg, c.want, c.says)
			}
			if sec := os.Getenv("AWS_SECRET_ACCESS_KEY"); sec != "" && strings.Contains(msg, sec) {
				t.Fatalf("the error shows the secret")
			}
			if strings.Contains(msg, "\n") {
				t.Fatalf("the error is not one line")
			}
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := blobstore.OpenBucket(cctx, base); !errors.Is(err, context.Canceled) {
		t.Fatalf("OpenBucket with a cancelled context: %v", err)
	}
}

// TestSweepUploads plays a writer that died after its upload completed.
func TestSweepUploads(t *testing.T) {
	s, _, u := openNew(t, nil)
	ctx := context.Background()
	b := blobtest.Open(t, u)
	if err := b.WriteAll(ctx, "uploads/dead-writer", []byte("partial"), nil); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SweepUploads(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("SweepUploads(1h) = %d, %v; want 0", n, err)
	}
	time.Sleep(1100 * time.Millisecond) // object times have one-second resolution
	if n, err := s.SweepUploads(ctx, time.Second); err != nil || n != 1 {
		t.Fatalf("SweepUploads(1s) = %d, %v; want 1", n, err)
	}
	wantObjects(t, u)
}

// TestRangeReadsPinVersion checks that ranges read after an object changed
// fail instead of returning the new bytes.
func TestRangeReadsPinVersion(t *testing.T) {
	s, idx, u := openNew(t, nil)
	ctx := context.Background()
	st := workspace.New(s, idx)
	data := content(4, 100_000)
	ref, _, _, err := drivertest.Put(ctx, st, bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, ref.Hex())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Info().Version == "" || r.Info().Size != int64(len(data)) {
		t.Fatalf("Info = %+v", r.Info())
	}
	buf := make([]byte, 10)
	ra := r.(driver.RangeReader)
	if n, err := ra.ReadAt(buf, 5); err != nil || n != 10 || !bytes.Equal(buf, data[5:15]) {
		t.Fatalf("ReadAt = %d, %v", n, err)
	}
	if n, err := ra.ReadAt(buf, int64(len(data))-4); n != 4 || !errors.Is(err, io.EOF) {
		t.Fatalf("ReadAt over the end = %d, %v", n, err)
	}
	blobtest.Tamper(t, u, ref.Hex(), bytes.Repeat([]byte{'y'}, len(data)))
	if _, err := ra.ReadAt(buf, 5); !errors.Is(err, workspace.ErrChanged) {
		t.Fatalf("ReadAt after the object changed: %v, want ErrChanged", err)
	}
	info, err := r.(driver.Restatter).Restat()
	if err != nil || info.Version == r.Info().Version {
		t.Fatalf("Restat = %+v, %v; want a new ETag", info, err)
	}
}

// TestLocalLocker checks the in-process lock used without Options.Locker.
func TestLocalLocker(t *testing.T) {
	b := blobtest.Open(t, blobtest.NewPrefix(t))
	s, err := blobstore.New(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := artifact.RefOf([]byte("k")).Hex()
	unlock, err := s.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(tctx, key); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held key: %v, want DeadlineExceeded", err)
	}
	other, err := s.Lock(ctx, artifact.RefOf([]byte("other")).Hex())
	if err != nil {
		t.Fatalf("Lock of another key: %v", err)
	}
	_ = other()
	got := make(chan error, 1)
	go func() {
		u, err := s.Lock(ctx, key)
		if err == nil {
			err = u()
		}
		got <- err
	}()
	if err := unlock(); err != nil || unlock() != nil {
		t.Fatal("unlock failed or is not idempotent")
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	if _, err := s.Lock(ctx, "x"); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("Lock of a malformed key: %v", err)
	}
	s.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, e1 := s.Lock(ctx, key)
	_, e2 := s.NewWriter(ctx)
	_, e3 := s.Stat(ctx, key)
	_, e4 := s.SweepUploads(ctx, 0)
	for i, err := range []error{e1, e2, e3, e4} {
		if !errors.Is(err, blobstore.ErrClosed) {
			t.Errorf("call %d after Close: %v, want ErrClosed", i, err)
		}
	}
}
