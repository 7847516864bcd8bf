package backend_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// TestUnregisteredScheme: a URL of a backend this module ships, in a
// program that did not import its package, is refused before anything is
// opened with a typed error naming the package to import (and never the
// URL, which may hold a password).
func TestUnregisteredScheme(t *testing.T) {
	const pw = "pw-marker-0123456789"
	cases := []struct{ scheme, url, pkg string }{
		{"postgres", "postgres://u:" + pw + "@h/db", "github.com/hybridctx/hybridctx/backend/postgres"},
		{"postgresql", "POSTGRESQL://u:" + pw + "@h/db", "github.com/hybridctx/hybridctx/backend/postgres"},
		{"s3", "s3://bkt?index=postgres%3A%2F%2Fu:" + pw + "%40h", "github.com/hybridctx/hybridctx/backend/s3"},
	}
	for _, c := range cases {
		t.Run(c.scheme, func(t *testing.T) {
			backend.WithoutDriver(t, c.scheme)
			for name, open := range map[string]func() error{
				"Open":  func() error { _, err := backend.Open(context.Background(), c.url, nil); return err },
				"Parse": func() error { _, _, err := backend.Parse(c.url); return err },
			} {
				err := open()
				var ue *backend.UnregisteredError
				if !errors.As(err, &ue) || ue.Scheme != c.scheme || ue.Import != c.pkg {
					t.Fatalf("%s: %v, want an UnregisteredError for %s naming %s", name, err, c.scheme, c.pkg)
				}
				if !errors.Is(err, backend.ErrNotBuilt) || errors.Is(err, backend.ErrBadURL) {
					t.Fatalf("%s: %v wraps the wrong sentinel", name, err)
				}
				if msg := err.Error(); !strings.Contains(msg, c.pkg) || strings.Contains(msg, pw) {
					t.Fatalf("%s: %q: want the package, never the password", name, msg)
				}
			}
		})
	}
}

// TestRegister: a host registers a backend of its own; a second driver for
// a scheme, or a built-in scheme, is a programming error.
func TestRegister(t *testing.T) {
	opened := ""
	backend.Register("test-reg", backend.Driver{
		Kind: "testkind",
		Check: func(u string) error {
			if strings.Contains(u, "bad") {
				return backend.ErrBadURL
			}
			return nil
		},
		Open: func(_ context.Context, u string, opts *backend.Options) (driver.Bodies, driver.Records, error) {
			if opts == nil {
				t.Error("Open got nil options")
			}
			opened = u
			return nil, nil, errors.New("test driver opens nothing")
		},
	})
	if kind, _, err := backend.Parse("TEST-REG://x"); err != nil || kind != "testkind" {
		t.Fatalf("Parse = %q, %v", kind, err)
	}
	if _, _, err := backend.Parse("test-reg://bad"); !errors.Is(err, backend.ErrBadURL) {
		t.Fatalf("Parse of a URL Check refuses = %v", err)
	}
	if _, err := backend.Open(context.Background(), "test-reg://x", nil); err == nil || opened != "test-reg://x" {
		t.Fatalf("Open = %v, opened %q", err, opened)
	}
	if !slices.Contains(backend.Schemes(), "test-reg") {
		t.Fatalf("Schemes() = %v", backend.Schemes())
	}
	open := func(context.Context, string, *backend.Options) (driver.Bodies, driver.Records, error) {
		return nil, nil, nil
	}
	for name, d := range map[string]struct {
		scheme string
		d      backend.Driver
	}{
		"twice":         {"test-reg", backend.Driver{Kind: "x", Open: open}},
		"built-in file": {"file", backend.Driver{Kind: "x", Open: open}},
		"built-in mem":  {"mem", backend.Driver{Kind: "x", Open: open}},
		"kind dir":      {"other", backend.Driver{Kind: "dir", Open: open}},
		"no Open":       {"other", backend.Driver{Kind: "x"}},
		"no kind":       {"other", backend.Driver{Open: open}},
		"no scheme":     {"", backend.Driver{Kind: "x", Open: open}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register %s did not panic", name)
				}
			}()
			backend.Register(d.scheme, d.d)
		}()
	}
}

// TestDirectoryProgramDeps: a program that opens a directory or memory
// workspace through backend.Open (the README's "Library in ten lines",
// testdata/tenlines) links neither the PostgreSQL nor the S3 backend nor
// their client libraries, and at most maxDeps packages, the standard
// library included. The count moves with the Go release; the forbidden
// packages do not.
func TestDirectoryProgramDeps(t *testing.T) {
	const maxDeps = 170
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", "./testdata/tenlines")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	forbidden := []string{
		"github.com/hybridctx/hybridctx/workspace/pgstore",
		"github.com/hybridctx/hybridctx/workspace/blobstore",
		"github.com/hybridctx/hybridctx/backend/postgres",
		"github.com/hybridctx/hybridctx/backend/s3",
		"github.com/jackc/", "github.com/aws/", "gocloud.dev/", "google.golang.org/",
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, strings.TrimSuffix(f, "/")+"/") {
				t.Errorf("the directory program links %s", d)
			}
		}
	}
	if len(deps) > maxDeps {
		t.Errorf("the directory program links %d packages, over %d", len(deps), maxDeps)
	}
	t.Logf("%d packages", len(deps))
}

// TestWorkspaceDocSchemes: the backends table of docs/workspace.md lists
// exactly the URL schemes a program that imports backend/all opens.
func TestWorkspaceDocSchemes(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "docs", "workspace.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(page), "## Backends, chosen by URL")
	if !ok {
		t.Fatal("docs/workspace.md has no backends section")
	}
	table, _, _ = strings.Cut(table, "\n\n## ")
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z0-9]+)://").FindAllStringSubmatch(table, -1) {
		if !slices.Contains(listed, m[1]) {
			listed = append(listed, m[1])
		}
	}
	slices.Sort(listed)
	var registered []string
	for _, s := range backend.Schemes() {
		if !strings.HasPrefix(s, "test-") {
			registered = append(registered, s)
		}
	}
	if !slices.Equal(listed, registered) {
		t.Fatalf("docs/workspace.md lists %v; the registered schemes are %v", listed, registered)
	}
}
