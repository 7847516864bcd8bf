// Package blobtest gives tests an isolated prefix in the bucket of the real
// S3-compatible server named by HYBRIDCTX_TEST_S3 (which .ci/services.sh
// exports, with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY). Without the
// variable a test is skipped, except under CI=true, where it fails.
package blobtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"os"
	"testing"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob" // s3:// URLs
)

// EnvURL names the bucket: s3://BUCKET?endpoint=…&use_path_style=true&disable_https=true&region=….
const EnvURL = "HYBRIDCTX_TEST_S3"

// ServerURL returns the bucket URL, skipping t (failing it under CI=true)
// when EnvURL is unset. It turns the AWS SDK's instance-metadata lookup off
// for the test process (AWS_EC2_METADATA_DISABLED=true, unless a test set
// the variable itself), so that no test ever contacts a non-loopback
// address for credentials.
func ServerURL(t testing.TB) string {
	t.Helper()
	if _, set := os.LookupEnv("AWS_EC2_METADATA_DISABLED"); !set {
		_ = os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	}
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is unset under CI=true: .ci/run must start the S3 server (.ci/services.sh)", EnvURL)
		}
		t.Skipf("%s is unset: no S3 server to test against (see .ci/services.sh)", EnvURL)
	}
	return u
}

// NewPrefix returns the bucket URL with a fresh random prefix, whose objects
// are all deleted when t ends.
func NewPrefix(t testing.TB) string {
	t.Helper()
	base := ServerURL(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	u := WithParam(t, base, "prefix", "t-"+hex.EncodeToString(b[:])+"/")
	t.Cleanup(func() { empty(t, u) })
	return u
}

// WithParam returns bucketURL with the query parameter key set to value.
func WithParam(t testing.TB, bucketURL, key, value string) string {
	t.Helper()
	u, err := url.Parse(bucketURL)
	if err != nil {
		t.Fatalf("blobtest: not a URL")
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open opens the bucket of bucketURL directly, closed when t ends.
func Open(t testing.TB, bucketURL string) *blob.Bucket {
	t.Helper()
	b, err := blob.OpenBucket(context.Background(), bucketURL)
	if err != nil {
		t.Fatalf("blobtest: open bucket: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// Tamper overwrites the stored body of key (64 hex digits) directly in the
// bucket, as an operator or a fault could.
func Tamper(t testing.TB, bucketURL, key string, data []byte) {
	t.Helper()
	b := Open(t, bucketURL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if ok, err := b.Exists(ctx, "sha256/"+key); err != nil || !ok {
		t.Fatalf("blobtest: tamper %s: exists %v, %v", key[:12], ok, err)
	}
	if err := b.WriteAll(ctx, "sha256/"+key, data, &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		t.Fatalf("blobtest: tamper %s: %v", key[:12], err)
	}
}

// Keys lists every object key under the prefix of bucketURL.
func Keys(t testing.TB, bucketURL string) []string {
	t.Helper()
	b := Open(t, bucketURL)
	var keys []string
	it := b.List(nil)
	for {
		obj, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return keys
		}
		if err != nil {
			t.Fatalf("blobtest: list: %v", err)
		}
		keys = append(keys, obj.Key)
	}
}

func empty(t testing.TB, bucketURL string) {
	b, err := blob.OpenBucket(context.Background(), bucketURL)
	if err != nil {
		t.Errorf("blobtest: open bucket to empty it: %v", err)
		return
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	it := b.List(nil)
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Errorf("blobtest: list to empty: %v", err)
			return
		}
		if err := b.Delete(ctx, obj.Key); err != nil {
			t.Errorf("blobtest: delete %s: %v", obj.Key, err)
		}
	}
}
