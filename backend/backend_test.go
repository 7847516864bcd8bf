package backend_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	_ "github.com/hybridctx/hybridctx/backend/all"
	s3backend "github.com/hybridctx/hybridctx/backend/s3"
	"github.com/hybridctx/hybridctx/internal/cli"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/blobstore"
	"github.com/hybridctx/hybridctx/workspace/blobstore/blobtest"
	"github.com/hybridctx/hybridctx/workspace/driver"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/pgstore"
	"github.com/hybridctx/hybridctx/workspace/pgstore/pgtest"
)

// s3URL joins a bucket URL and an index URL the way users write them.
func s3URL(bucketURL, indexURL string) string {
	return bucketURL + "&index=" + url.QueryEscape(indexURL)
}

func TestParse(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "ws")
	good := []struct{ in, kind, dir string }{
		{".hybridctx", "dir", ".hybridctx"},
		{"a/../b/", "dir", "b"},
		{"file://" + abs, "dir", abs},
		{"mem://", "mem", ""},
		{"MEM://", "mem", ""},
		{"postgres://u:p@h:5432/db?sslmode=disable", "postgres", ""},
		{"postgresql://h/db", "postgres", ""},
		{"s3://bkt?region=x&index=" + url.QueryEscape("postgres://u:p@h/db?sslmode=disable&x=y"), "s3", ""},
		{"s3://bkt/?index=postgresql%3A%2F%2Fh%2Fdb", "s3", ""},
	}
	for _, c := range good {
		kind, dir, err := backend.Parse(c.in)
		if err != nil || kind != c.kind || dir != c.dir {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q", c.in, kind, dir, err, c.kind, c.dir)
		}
	}
	const pw = "hunter2-secret"
	bad := []string{
		"", "  ", "a\x00b", "mem://x", "file://host/x", "file:///x?y", "file://rel", "ftp://x", "gs://bkt", "azblob://bkt", "1x://a", "a b://c",
		"s3://bkt", "s3://bkt?region=x", "s3://?index=postgres%3A%2F%2Fh",
		"s3://bkt?index=mysql%3A%2F%2Fu:" + pw + "@h",
		"s3://bkt?index=a&index=b",
		"s3://bkt/key?index=postgres%3A%2F%2Fh",
		"s3://u:" + pw + "@bkt?index=postgres%3A%2F%2Fh",
		"s3://bkt?index=postgres%3A%2F%2Fu:" + pw + "@h%zz",
		"s3://bkt#frag?index=postgres://u:" + pw + "@h",
	}
	for _, in := range bad {
		kind, _, err := backend.Parse(in)
		if !errors.Is(err, backend.ErrBadURL) {
			t.Errorf("Parse(%q) = %q, %v; want ErrBadURL", in, kind, err)
			continue
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("Parse(%q): the error shows the password: %v", in, err)
		}
	}
}

// FuzzParse checks that Parse never panics and never quotes the password of
// a distributed workspace URL in its errors.
func FuzzParse(f *testing.F) {
	f.Add("s3", "bkt", "region=x&", "user", "pass-word-1", "h:5432/db?sslmode=disable", true)
	f.Add("postgres", "", "", "u", "p@ss%zz", "[::1", false)
	f.Add("s3", "", "", "", "secret-value", "", true)
	f.Fuzz(func(t *testing.T, scheme, bucket, query, user, password, rest string, escape bool) {
		index := "postgres://" + user + ":" + password + "@" + rest
		if escape {
			index = url.QueryEscape(index)
		}
		var u string
		if strings.HasPrefix(scheme, "postgres") {
			u = index
		} else {
			u = scheme + "://" + bucket + "?" + query + "index=" + index
		}
		kind, _, err := backend.Parse(u)
		if err == nil {
			if kind == "" {
				t.Fatalf("Parse(%q) accepted with no kind", u)
			}
			return
		}
		if !errors.Is(err, backend.ErrBadURL) {
			t.Fatalf("Parse(%q): %v does not wrap ErrBadURL", u, err)
		}
		if len(password) >= 6 && !strings.Contains("invalid workspace URL: s3:// URL does not parse", password) &&
			strings.Contains(err.Error(), password) {
			t.Fatalf("Parse(%q): the error shows the password: %v", u, err)
		}
	})
}

// TestOpenExistingBackends keeps the embedded backends as they were.
func TestOpenExistingBackends(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"mem://", filepath.Join(t.TempDir(), "ws")} {
		s, err := backend.Open(ctx, u, nil)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if _, _, res, err := drivertest.Put(ctx, s, strings.NewReader("abc"), nil); err != nil || res != workspace.Created {
			t.Fatalf("Put on %q = %v, %v", u, res, err)
		}
		s.Close()
	}
	for _, u := range []string{"gs://b", "azblob://b"} {
		_, err := backend.Open(ctx, u, nil)
		var ue *backend.UnregisteredError
		if !errors.Is(err, backend.ErrBadURL) || !errors.As(err, &ue) || ue.Import != "" {
			t.Fatalf("Open(%q): %v, want an UnregisteredError wrapping ErrBadURL", u, err)
		}
	}
}

// TestTempDir: a directory workspace offers its body directory as its
// temporary area, where a spool file a killed process left under
// driver.TempPrefix is swept at the next open; a memory workspace has none.
func TestTempDir(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ws")
	s, err := backend.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.TempDir(); got != filepath.Join(dir, "sha256") {
		t.Fatalf("TempDir = %q", got)
	}
	left := filepath.Join(s.TempDir(), driver.TempPrefix+"mcp-left")
	if err := os.WriteFile(left, []byte("spool"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = backend.Open(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the leftover spool was not swept: %v", err)
	}
	m, err := backend.Open(ctx, "mem://", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.TempDir(); got != "" {
		t.Fatalf("mem:// TempDir = %q", got)
	}
}

// roundTrip stores a body and a record through s and reads them back.
func roundTrip(t *testing.T, s *workspace.Store) {
	t.Helper()
	ctx := context.Background()
	data := bytes.Repeat([]byte("distributed "), 1000)
	ref, _, res, err := drivertest.Put(ctx, s, bytes.NewReader(data), nil)
	if err != nil || res != workspace.Created {
		t.Fatalf("Put = %v, %v", res, err)
	}
	rec := artifact.Record{Owner: owner("x"), Ref: ref, Size: int64(len(data)), Kind: "text", CreatedAt: t0, LastUsedAt: t0}
	if created, err := s.CreateRecord(ctx, rec); err != nil || !created {
		t.Fatalf("CreateRecord = %v, %v", created, err)
	}
	got, err := s.ReadVerified(ctx, ref, int64(len(data)), 0, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadVerified: %v", err)
	}
}

// TestOpenDistributed opens both distributed backends by URL.
func TestOpenDistributed(t *testing.T) {
	ctx := context.Background()
	t.Run("s3 by URL", func(t *testing.T) {
		u := s3URL(blobtest.NewPrefix(t), pgtest.NewSchema(t))
		b, r, err := backend.OpenDrivers(ctx, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := workspace.New(b, r)
		defer s.Close()
		if _, ok := b.(*blobstore.Store); !ok {
			t.Fatalf("bodies are %T", b)
		}
		if idx, ok := r.(*pgstore.Store); !ok || idx.Mode() != pgstore.BodiesElsewhere {
			t.Fatalf("records are %T", r)
		}
		roundTrip(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		b, r, err := backend.OpenDrivers(ctx, pgtest.NewSchema(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		s := workspace.New(b, r)
		defer s.Close()
		if _, ok := b.(*pgstore.Store); !ok {
			t.Fatalf("bodies are %T", b)
		}
		roundTrip(t, s)
	})
	t.Run("s3", func(t *testing.T) {
		u := s3URL(blobtest.NewPrefix(t), pgtest.NewSchema(t))
		b, r, err := s3backend.Open(ctx, u, nil, &s3backend.Options{Bodies: &blobstore.Options{SpoolBytes: 100}})
		if err != nil {
			t.Fatal(err)
		}
		s := workspace.New(b, r)
		defer s.Close()
		if r.Mode() != pgstore.BodiesElsewhere {
			t.Fatalf("records keep bodies: %v", r.Mode())
		}
		roundTrip(t, s)
	})
}

// tables counts the tables in the schema of a pgtest URL.
func tables(t *testing.T, schemaURL string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func withPassword(t *testing.T, u, pw string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.User = url.UserPassword(p.User.Username(), pw)
	return p.String()
}

func freeEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

// TestStartupErrors opens distributed workspaces that cannot work: each
// gives one error naming the backend, never a password or secret, exit 1
// from the command line, and writes nothing.
func TestStartupErrors(t *testing.T) {
	const pw = "pw-marker-0123456789"
	const secret = "aws-secret-marker-987"
	realPG := pgtest.ServerURL(t)
	realPW, _ := func() (string, bool) { p, _ := url.Parse(realPG); return p.User.Password() }()
	cases := []struct {
		name, backend string
		url           func(t *testing.T) (u string, untouched func(t *testing.T))
		env           map[string]string
	}{
		{"postgres wrong password", "postgres", func(t *testing.T) (string, func(*testing.T)) {
			u := pgtest.NewSchema(t)
			return withPassword(t, u, pw), func(t *testing.T) {
				if n := tables(t, u); n != 0 {
					t.Errorf("%d tables created", n)
				}
			}
		}, nil},
		{"postgres unreachable", "postgres", func(t *testing.T) (string, func(*testing.T)) {
			p, _ := url.Parse(withPassword(t, realPG, pw))
			p.Host = strings.TrimPrefix(freeEndpoint(t), "http://")
			return p.String(), func(*testing.T) {}
		}, nil},
		{"s3 missing bucket", "s3", func(t *testing.T) (string, func(*testing.T)) {
			idx := pgtest.NewSchema(t)
			p, _ := url.Parse(blobtest.ServerURL(t))
			p.Host = "no-such-bucket-here"
			return s3URL(p.String(), idx), func(t *testing.T) {
				if n := tables(t, idx); n != 0 {
					t.Errorf("%d tables created in the index", n)
				}
			}
		}, nil},
		{"s3 wrong credentials", "s3", func(t *testing.T) (string, func(*testing.T)) {
			idx, pre := pgtest.NewSchema(t), blobtest.NewPrefix(t)
			return s3URL(pre, idx), func(t *testing.T) {
				if n := tables(t, idx); n != 0 {
					t.Errorf("%d tables created in the index", n)
				}
			}
		}, map[string]string{"AWS_SECRET_ACCESS_KEY": secret}},
		{"s3 unreachable", "s3", func(t *testing.T) (string, func(*testing.T)) {
			return s3URL(blobtest.WithParam(t, blobtest.ServerURL(t), "endpoint", freeEndpoint(t)), withPassword(t, realPG, pw)), func(*testing.T) {}
		}, nil},
		{"s3 index wrong password", "postgres", func(t *testing.T) (string, func(*testing.T)) {
			pre := blobtest.NewPrefix(t)
			return s3URL(pre, withPassword(t, pgtest.NewSchema(t), pw)), func(t *testing.T) {
				if keys := blobtest.Keys(t, pre); len(keys) != 0 {
					t.Errorf("objects written: %v", keys)
				}
			}
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, untouched := c.url(t) // before Setenv, so that its cleanups run with good credentials
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			_, err := backend.Open(context.Background(), u, nil)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			t.Log(msg)
			for _, s := range []string{pw, secret, realPW} {
				if strings.Contains(msg, s) {
					t.Fatalf("the error shows a password or secret")
				}
			}
			if !strings.Contains(strings.ToLower(msg), c.backend) || strings.Contains(msg, "\n") {
				t.Fatalf("want one line naming %s", c.backend)
			}
			if !errors.Is(err, driver.ErrUnavailable) {
				t.Fatalf("error does not wrap driver.ErrUnavailable")
			}
			untouched(t)
			// The command line: exit 1, one line on stderr, no secret.
			var stdout, stderr bytes.Buffer
			env := map[string]string{cli.EnvWorkspace: u, cli.EnvUser: "u", cli.EnvWorkflow: "w", cli.EnvSession: "s"}
			code := cli.Main(context.Background(), []string{"ls"}, cli.Env{
				Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] },
			})
			out := stderr.String()
			if code != cli.ExitInternal || stdout.Len() != 0 || strings.Count(out, "\n") != 1 {
				t.Fatalf("hybridctx ls = exit %d, stdout %q, stderr %q", code, stdout.String(), out)
			}
			for _, s := range []string{pw, secret, realPW} {
				if strings.Contains(out, s) {
					t.Fatalf("hybridctx shows a password or secret")
				}
			}
			untouched(t)
		})
	}
}
