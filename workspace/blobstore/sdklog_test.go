package blobstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hybridctx/hybridctx/workspace/blobstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// withoutCredentials clears every source of AWS credentials but the
// instance-metadata service, which it points at a loopback server that
// answers like an IMDSv1-only host with no role: the SDK then warns that it
// falls back to IMDSv1. It returns how many requests that server saw.
func withoutCredentials(t *testing.T) *atomic.Int64 {
	t.Helper()
	var hits atomic.Int64
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(imds.Close)
	home := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "credentials"),
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_EC2_METADATA_DISABLED": "false", "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.URL, "HOME": home,
	} {
		t.Setenv(k, v)
	}
	return &hits
}

// captureStderr runs fn with os.Stderr redirected and returns what it got.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	defer func() {
		os.Stderr = saved
	}()
	fn()
	os.Stderr = saved
	_ = w.Close()
	return string(<-done)
}

func TestSDKLogLinesNeverReachStderr(t *testing.T) {
	hits := withoutCredentials(t)
	url := "s3://some-bucket?region=us-east-1&endpoint=http://127.0.0.1:1&use_path_style=true&disable_https=true"
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, opts := range []*blobstore.BucketOptions{nil, {Logger: logger}} {
		var err error
		stderr := captureStderr(t, func() {
			var b interface{ Close() error }
			b, err = blobstore.OpenBucketWith(context.Background(), url, opts)
			if err == nil {
				_ = b.Close()
			}
		})
		if !errors.Is(err, driver.ErrUnavailable) {
			t.Fatalf("OpenBucketWith without credentials: %v, want ErrUnavailable", err)
		}
		if stderr != "" {
			t.Fatalf("the SDK wrote to standard error: %q", stderr)
		}
	}
	if hits.Load() == 0 {
		t.Fatal("the instance-metadata lookup never reached the loopback server")
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "IMDSv1") {
		t.Fatalf("the SDK's warning was not routed to the logger: %q", logged.String())
	}
}
