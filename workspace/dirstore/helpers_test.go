package dirstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// openAt opens a Store on dir and closes it when the test ends.
func openAt(t testing.TB, dir string) *dirstore.Store {
	t.Helper()
	s, err := dirstore.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openNew opens a Store on a fresh workspace directory.
func openNew(t testing.TB) *dirstore.Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "ws"))
}

func keyOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// put writes data as a new body and commits it under its digest.
func put(t testing.TB, s driver.Bodies, data []byte, replace bool) error {
	t.Helper()
	return putKey(t, s, keyOf(data), data, replace)
}

// putKey writes data and commits it under key, aborting on failure.
func putKey(t testing.TB, s driver.Bodies, key string, data []byte, replace bool) error {
	t.Helper()
	ctx := context.Background()
	w, err := s.NewWriter(ctx)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return w.Commit(ctx, key, replace)
}

// temps lists the temporary files left in the body directory.
func temps(t testing.TB, s *dirstore.Store) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(s.Dir(), "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// perm returns the permission bits of path, without following a link.
func perm(t testing.TB, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func readBody(t testing.TB, s driver.Bodies, key string) []byte {
	t.Helper()
	r, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open body: %v", err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return b
}

var testOwner = artifact.Owner{User: "alice", Workflow: "wf", Session: "s1"}

// record builds a record for owner and the body data, last used at used.
func record(owner artifact.Owner, data string, used time.Time) artifact.Record {
	return artifact.Record{
		Owner:       owner,
		Ref:         artifact.RefOf([]byte(data)),
		Size:        int64(len(data)),
		Kind:        "text",
		Tool:        "shell",
		CallID:      "call-1",
		Description: "a test record",
		CreatedAt:   used.Add(-time.Minute).UTC(),
		LastUsedAt:  used.UTC(),
	}
}
