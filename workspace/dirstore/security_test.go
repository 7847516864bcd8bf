package dirstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/workspace/dirstore"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

var invalidKeys = []string{
	"",
	"../x",
	"../" + strings.Repeat("a", 61),
	strings.Repeat("A", 64),
	strings.ToUpper(keyOf([]byte("x"))),
	strings.Repeat("a", 63),
	strings.Repeat("a", 65),
	strings.Repeat("g", 64),
	strings.Repeat("a", 63) + "/",
	strings.Repeat("a", 63) + "\x00",
	".tmp-" + strings.Repeat("a", 59),
	"sha256/" + strings.Repeat("a", 57),
}

// tree lists every path under dir, for "nothing changed" checks.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// keyOps calls every key-taking method with key and returns their errors.
func keyOps(s *dirstore.Store, w interface {
	Commit(context.Context, string, bool) error
}, key string) map[string]error {
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["Open"] = s.Open(ctx, key)
	_, errs["Stat"] = s.Stat(ctx, key)
	errs["Delete"] = s.Delete(ctx, key)
	unlock, err := s.Lock(ctx, key)
	if err == nil {
		_ = unlock()
	}
	errs["Lock"] = err
	errs["Commit"] = w.Commit(ctx, key, false)
	errs["CommitReplace"] = w.Commit(ctx, key, true)
	return errs
}

func TestInvalidKeysRejected(t *testing.T) {
	s := openNew(t)
	w, err := s.NewWriter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	_, _ = w.Write([]byte("x"))
	before := tree(t, s.Dir())
	for _, key := range invalidKeys {
		for op, err := range keyOps(s, w, key) {
			if !errors.Is(err, fs.ErrInvalid) {
				t.Errorf("%s(%q) = %v, want fs.ErrInvalid", op, key, err)
			}
		}
	}
	if after := tree(t, s.Dir()); !slices.Equal(before, after) {
		t.Fatalf("invalid keys changed the tree:\nbefore %v\nafter  %v", before, after)
	}
}

// TestInvalidKeysNoFileSystemCall shows that keys are checked before any
// file-system call: on a closed Store, whose root refuses every call, an
// invalid key still reports fs.ErrInvalid while a valid key reaches the file
// system and fails there.
func TestInvalidKeysNoFileSystemCall(t *testing.T) {
	s := openNew(t)
	w, err := s.NewWriter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("x"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for op, err := range keyOps(s, w, keyOf([]byte("x"))) {
		if err == nil || errors.Is(err, fs.ErrInvalid) {
			t.Errorf("closed store: %s(valid key) = %v, want a file-system error", op, err)
		}
	}
	for _, key := range invalidKeys {
		for op, err := range keyOps(s, w, key) {
			if !errors.Is(err, fs.ErrInvalid) {
				t.Errorf("closed store: %s(%q) = %v, want fs.ErrInvalid", op, key, err)
			}
		}
	}
}

// TestSymlinkedBodyDirectoryRefused replaces sha256/ by a symbolic link to a
// directory outside the workspace: nothing is read from or written to it.
func TestSymlinkedBodyDirectoryRefused(t *testing.T) {
	ctx := context.Background()
	s := openNew(t)
	data := []byte("inside")
	key := keyOf(data)
	if err := put(t, s, data, false); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, key), []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	pending, err := s.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = pending.Write([]byte("pending"))
	pendingKey := keyOf([]byte("pending"))

	bodies := filepath.Join(s.Dir(), "sha256")
	if err := os.Rename(bodies, bodies+".real"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, bodies); err != nil {
		t.Fatal(err)
	}
	before := tree(t, outside)

	if r, err := s.Open(ctx, key); err == nil {
		r.Close()
		t.Error("Open through the symlinked directory succeeded")
	}
	if _, err := s.Stat(ctx, key); err == nil {
		t.Error("Stat through the symlinked directory succeeded")
	}
	if err := s.Delete(ctx, key); err == nil {
		t.Error("Delete through the symlinked directory succeeded")
	}
	if w, err := s.NewWriter(ctx); err == nil {
		w.Abort()
		t.Error("NewWriter through the symlinked directory succeeded")
	}
	if err := pending.Commit(ctx, pendingKey, false); err == nil {
		t.Error("Commit through the symlinked directory succeeded")
	}
	if err := pending.Commit(ctx, pendingKey, true); err == nil {
		t.Error("replace Commit through the symlinked directory succeeded")
	}
	_ = pending.Abort()
	for _, err := range s.List(ctx) {
		if err == nil {
			t.Error("List through the symlinked directory yielded a body")
		}
	}
	if after := tree(t, outside); !slices.Equal(before, after) {
		t.Fatalf("outside directory changed: %v → %v", before, after)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, key)); string(b) != "outside" {
		t.Fatalf("outside file changed: %q", b)
	}
	_ = s.Close()
	if s2, err := dirstore.Open(ctx, s.Dir(), nil); err == nil {
		s2.Close()
		t.Fatal("Open accepted a symlinked sha256/")
	}
}

// TestSymlinkedBodyRefused plants symbolic links named like keys, pointing
// outside the workspace and inside it: they are never followed, and read as
// bodies of size -1 that nothing can verify.
func TestSymlinkedBodyRefused(t *testing.T) {
	ctx := context.Background()
	s := openNew(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := []byte("points outside")
	in := []byte("points inside")
	outKey, inKey := keyOf(out), keyOf(in)
	if err := os.Symlink(secret, filepath.Join(s.Dir(), "sha256", outKey)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../records.db", filepath.Join(s.Dir(), "sha256", inKey)); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{outKey, inKey} {
		r, err := s.Open(ctx, key)
		if err != nil {
			t.Fatalf("Open of a symlinked body: %v", err)
		}
		if _, ok := r.(driver.RangeReader); ok {
			t.Error("Open of a symlinked body gave a file reader")
		}
		b, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil || len(b) != 0 || r.Info().Size != -1 {
			t.Errorf("symlinked body read %q, %v, size %d; want nothing and size -1", b, err, r.Info().Size)
		}
		info, err := s.Stat(ctx, key)
		if err != nil || info.Size != -1 || info.Version != "" {
			t.Errorf("Stat of a symlinked body = %+v, %v; want size -1", info, err)
		}
	}
	listed := map[string]int64{}
	for info, err := range s.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		listed[info.Key] = info.Size
	}
	if len(listed) != 2 || listed[outKey] != -1 || listed[inKey] != -1 {
		t.Errorf("List = %v, want both links with size -1", listed)
	}
	unsafe, _ := s.UnsafePermissions(ctx)
	for _, key := range []string{outKey, inKey} {
		if !slices.Contains(unsafe, "sha256/"+key) {
			t.Errorf("UnsafePermissions = %v, misses the symlink %s", unsafe, key)
		}
	}
	// The name is taken, so a create-only commit is refused, and a replace
	// swaps the link itself for a body without touching its target.
	if err := put(t, s, out, false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create-only Commit over a symlink = %v, want fs.ErrExist", err)
	}
	if err := put(t, s, out, true); err != nil {
		t.Fatalf("replace Commit over a symlink: %v", err)
	}
	if got := readBody(t, s, outKey); !bytes.Equal(got, out) {
		t.Fatalf("body = %q", got)
	}
	// Delete removes the link, never its target.
	if err := s.Delete(ctx, inKey); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
		t.Fatalf("outside file = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "records.db")); err != nil {
		t.Fatalf("link target inside the root removed: %v", err)
	}
}

// TestPlantedDatabaseSymlinkRefused: records.db must be a regular file.
func TestPlantedDatabaseSymlinkRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "elsewhere.db")
	if err := os.Symlink(outside, filepath.Join(dir, "records.db")); err != nil {
		t.Fatal(err)
	}
	if s, err := dirstore.Open(context.Background(), dir, nil); err == nil {
		s.Close()
		t.Fatal("Open accepted a symlinked records.db")
	}
	if _, err := os.Lstat(outside); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("file created outside the workspace: %v", err)
	}
}
