package filestore_test

import (
	"errors"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/filestore"
)

func TestCanonicalFile(t *testing.T) {
	for _, in := range []string{"./kb/foo.md", "kb//foo.md", "kb/./foo.md", "/kb/foo.md", "kb/foo.md/", "//kb//foo.md//",
		`kb\foo.md`, "  kb/foo.md  ", `.\kb\foo.md`, "\tkb/foo.md\r\n"} {
		if got, err := filestore.CanonicalFile(in); err != nil || got != "kb/foo.md" {
			t.Errorf("%q → %q, %v", in, got, err)
		}
	}
	for in, want := range map[string]string{
		"/foo/./bar//baz/": "foo/bar/baz", "Kb/Foo.md": "Kb/Foo.md", "foo /bar.md": "foo /bar.md",
		"version..draft.md": "version..draft.md", ".../file.md": ".../file.md", "..hidden": "..hidden", "hidden..": "hidden..",
	} {
		if got, err := filestore.CanonicalFile(in); err != nil || got != want {
			t.Errorf("%q → %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"..", "../foo", "foo/..", "foo/./../bar", `foo\..\bar`, "", "   ", ".", "/", "//", "./.", `\`, "  /  ",
		"a\x00b", "\xff", strings.Repeat("a", filestore.MaxPathLen+1)} {
		if got, err := filestore.CanonicalFile(in); !errors.Is(err, filestore.ErrInvalidPath) {
			t.Errorf("%.40q → %q, %v; want ErrInvalidPath", in, got, err)
		} else if len(strings.TrimSpace(in)) > 4 && len(in) < 100 && strings.Contains(err.Error(), in) {
			t.Errorf("error repeats the path: %v", err)
		}
	}
}

func TestCanonicalDir(t *testing.T) {
	for _, in := range []string{"", " ", ".", "./", "/", "//", "///", "/./", "/.", "./.", `\`, "  /  "} {
		if got, err := filestore.CanonicalDir(in); err != nil || got != "" {
			t.Errorf("%q → %q, %v; want the root", in, got, err)
		}
	}
	if got, err := filestore.CanonicalDir("/a//b/"); err != nil || got != "a/b" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := filestore.CanonicalDir("a/../b"); !errors.Is(err, filestore.ErrInvalidPath) {
		t.Error(err)
	}
}

func TestRootedAndReserved(t *testing.T) {
	for in, want := range map[string]bool{
		"/x": true, `\x`: true, `C:\x`: true, "c:/x": true, "C:x": true, `\\server\share\x`: true, "  /x": true,
		"x": false, "x/y": false, "1:/x": false, "ab:/x": false, "artifact://sha256/x": false, "": false, ".": false,
	} {
		if filestore.Rooted(in) != want {
			t.Errorf("Rooted(%q) = %v", in, !want)
		}
	}
	for in, want := range map[string]bool{
		"sha256/ab": true, "SHA256": true, "locks/x": true, "records.db": true, "records.db-wal": true, ".hybridctx/x": true,
		".HybridCtx": true, ".tmp-123": true, "artifact:/sha256/ab": true,
		"notes/sha256": false, "sha2566": false, "record.db": false, "hybridctx": false, "artifacts": false, "a": false,
	} {
		if filestore.Reserved(in) != want {
			t.Errorf("Reserved(%q) = %v", in, !want)
		}
	}
}

// FuzzCanonical checks that no input resolves outside the root: a canonical
// path is local, clean, free of `\`, `.` and `..` segments and of outer
// slashes, canonical again unchanged, and stays under any root it is
// joined to.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"kb/foo.md", "../x", `..\x`, "./a/./b/", "  /a  ", `C:\x`, "a/..b/c..", "…/..", "a/ ../b",
		"\u00a0..\u00a0", "a/\t../b", ". ./x", "a\\..", "%2e%2e/x", "\u2024\u2024/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, derr := filestore.CanonicalDir(in)
		c, ferr := filestore.CanonicalFile(in)
		if (ferr == nil) != (derr == nil && d != "") || (ferr == nil && c != d) {
			t.Fatalf("file %q/%v and dir %q/%v disagree", c, ferr, d, derr)
		}
		if derr != nil {
			if !errors.Is(derr, filestore.ErrInvalidPath) {
				t.Fatalf("error %v does not wrap ErrInvalidPath", derr)
			}
			return
		}
		if again, err := filestore.CanonicalDir(d); err != nil || again != d {
			t.Fatalf("%q is not canonical: %q, %v", d, again, err)
		}
		if d == "" {
			return
		}
		if strings.ContainsRune(d, '\\') || strings.HasPrefix(d, "/") || strings.HasSuffix(d, "/") || strings.TrimSpace(d) != d {
			t.Fatalf("%q from %q", d, in)
		}
		for _, seg := range strings.Split(d, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("segment %q in %q", seg, d)
			}
		}
		if !filepath.IsLocal(d) || path.Clean(d) != d {
			t.Fatalf("%q is not a clean local path", d)
		}
		if j := path.Join("/root/ws", d); !strings.HasPrefix(j, "/root/ws/") {
			t.Fatalf("%q escapes the root: %q", in, j)
		}
	})
}
