package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
)

// corruptDigestIndex flips one hex digit of ref's entry in the records
// database's digest index, leaving the records table intact: a lookup of
// ref through the index then finds no record although one exists.
func corruptDigestIndex(t *testing.T, ws string, ref artifact.Ref) {
	t.Helper()
	path := filepath.Join(ws, "records.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var pageSize, root int64
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'records_digest'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := b[(root-1)*pageSize : root*pageSize]
	i := bytes.Index(page, []byte(ref.Hex()))
	if i < 0 {
		t.Fatal("the digest is not in the index's root page")
	}
	if page[i] == '0' {
		page[i] = '1'
	} else {
		page[i] = '0'
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDamagedDigestIndexVerifyReportsGCRefuses(t *testing.T) {
	ws := newWorkspace(t)
	body := randomBytes(5000, 21)
	ref := offloadRef(t, ws, body)
	past := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(bodyPath(ws, ref), past, past); err != nil {
		t.Fatal(err)
	}
	corruptDigestIndex(t, ws, ref)

	js := run(t, "--workspace", ws, "--json", "verify")
	wantCode(t, js, ExitDamage)
	m := decodeObject(t, js.stdout)
	if !strings.Contains(string(m["database"]), `"part":"records.db"`) ||
		!strings.Contains(string(m["database"]), "integrity check failed") {
		t.Fatalf("verify --json database = %s", m["database"])
	}
	text := run(t, "--workspace", ws, "verify")
	wantCode(t, text, ExitDamage)
	if !strings.Contains(text.stdout, "database records.db: SQLite integrity check failed") ||
		!strings.Contains(text.stdout, "the database is damaged") {
		t.Fatalf("verify: %q", text.stdout)
	}

	for _, args := range [][]string{{"gc", "--max-age", "30d", "--grace", "1m"}, {"gc", "--max-age", "30d", "--grace", "1m", "--dry-run"}} {
		r := run(t, append([]string{"--workspace", ws}, args...)...)
		wantCode(t, r, ExitInternal)
		wantOneErrorLine(t, r, "refusing to collect garbage", "records.db: SQLite integrity check failed", "verify")
	}
	if !exists(t, bodyPath(ws, ref)) {
		t.Fatal("gc deleted a body its record still references")
	}
	got := run(t, host(ws, "rehydrate", ref.String(), "--budget", "5000")...)
	wantCode(t, got, ExitOK)
	if got.stdout != string(body) {
		t.Fatal("the owner's read no longer returns the body")
	}
}

func TestReadingCommandsNeverCreateAWorkspace(t *testing.T) {
	ws := newWorkspace(t)
	ref := artifact.RefOf([]byte("x")).String()
	for _, args := range [][]string{
		host(ws, "ls"),
		host(ws, "stat", ref),
		host(ws, "rehydrate", ref, "--budget", "10"),
		host(ws, "rehydrate", "not-a-reference", "--budget", "10"),
		{"--workspace", ws, "verify"},
		{"--workspace", ws, "verify", "--repair"},
		{"--workspace", ws, "gc", "--max-age", "30d", "--dry-run"},
		{"--workspace", ws, "gc", "--max-age", "30d"},
	} {
		for _, js := range []bool{false, true} {
			a := args
			if js {
				a = append([]string{"--json"}, args...)
			}
			r := run(t, a...)
			if r.code != ExitInternal || !strings.Contains(r.stderr, "hybridctx: no workspace at "+ws+" ") {
				t.Errorf("%v: exit %d, stderr %q; want exit 1 and no workspace at %s", a, r.code, r.stderr, ws)
			}
			if _, err := os.Stat(ws); !os.IsNotExist(err) {
				t.Fatalf("%v created the workspace (stat err %v)", a, err)
			}
		}
	}
	// The commands that write create it.
	offloadRef(t, ws, randomBytes(100, 1))
	wantCode(t, run(t, host(ws, "ls")...), ExitOK)
	wantCode(t, run(t, "--workspace", ws, "verify"), ExitOK)
}

func TestExitOneErrorsAreCategoricalAndJSON(t *testing.T) {
	// A regular file where the workspace directory should be.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A records database garbled after its header.
	garbled := existingWorkspace(t)
	db := filepath.Join(garbled, "records.db")
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < len(b); i++ {
		b[i] = 0xA5
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args     []string
		code     string
		rawTexts []string
	}{
		{withStdinOffload(file), "storage_error", []string{"not a directory", file + "/"}},
		{host(garbled, "ls"), "database_damaged", []string{"malformed", "(11)", "sqlite", "SQLITE"}},
		{[]string{"--workspace", garbled, "verify"}, "database_damaged", []string{"malformed", "(11)"}},
		{host(newWorkspace(t), "ls"), "no_workspace", nil},
		{host(garbled, "offload"), "usage", nil},
	}
	for _, c := range cases {
		text := run(t, c.args...)
		js := run(t, append([]string{"--json"}, c.args...)...)
		for _, r := range []result{text, js} {
			if r.code != ExitInternal && r.code != ExitUsage {
				t.Fatalf("%v: exit %d, stderr %q", c.args, r.code, r.stderr)
			}
			for _, raw := range c.rawTexts {
				if strings.Contains(r.stderr, raw) || strings.Contains(r.stdout, raw) {
					t.Errorf("%v: output carries raw text %q: %q %q", c.args, raw, r.stderr, r.stdout)
				}
			}
		}
		if text.stdout != "" {
			t.Errorf("%v: without --json stdout %q", c.args, text.stdout)
		}
		if slices.Contains(c.args, "verify") && strings.Contains(text.stderr, "run hybridctx verify") {
			t.Errorf("%v: verify sends the user to itself: %q", c.args, text.stderr)
		}
		m := decodeObject(t, js.stdout)
		wantKeys(t, m, "error")
		var e struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(m["error"], &e); err != nil || e.Code != c.code ||
			"hybridctx: "+e.Message+"\n" != js.stderr {
			t.Errorf("%v: --json error %s (%v), want code %q and the stderr line %q", c.args, m["error"], err, c.code, js.stderr)
		}
	}
}

// withStdinOffload is an offload into ws (its input is empty stdin).
func withStdinOffload(ws string) []string { return host(ws, "offload", "--threshold", "10") }

// TestWALDeletedUnderARunningProcessIsNamed holds the records database open
// in this process (as a long-running mcp proxy would), deletes records.db-wal,
// and runs the real binary: each command names the deleted log instead of
// failing with a raw disk I/O error, and once the holder exits every record
// is there.
func TestWALDeletedUnderARunningProcessIsNamed(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, DefaultWorkspace)
	env := []string{"HYBRIDCTX_USER=ada", "HYBRIDCTX_WORKFLOW=triage", "HYBRIDCTX_SESSION=s1"}
	for i := range 3 {
		if r := runBinary(t, dir, env, randomBytes(500, uint64(i)), "offload", "--threshold", "10"); r.code != 0 {
			t.Fatalf("offload: exit %d %s", r.code, r.stderr)
		}
	}
	holder, err := dirstore.Open(context.Background(), ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.CreateRecord(context.Background(), artifact.Record{
		Owner: artifact.Owner{User: "ada", Workflow: "triage", Session: "s2"}, Ref: artifact.RefOf(randomBytes(500, 0)),
		Size: 500, Kind: "binary", CreatedAt: time.Now(), LastUsedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "records.db-wal")); err != nil {
		t.Fatal(err)
	}
	// verify names the file: as database damage (exit 10) when it could
	// open the workspace, else on its error line (exit 1).
	for _, args := range [][]string{{"verify"}, {"--json", "verify"}, {"ls"}, {"--json", "ls"}} {
		r := runBinary(t, dir, env, nil, args...)
		out := string(r.stdout) + string(r.stderr)
		named := r.code == ExitInternal && strings.Contains(string(r.stderr), "records.db-wal was deleted while a process had the database open") ||
			r.code == ExitDamage && args[len(args)-1] == "verify" && strings.Contains(string(r.stdout), "records.db-wal")
		if !named || strings.Contains(out, "(522)") || strings.Contains(out, "disk I/O") {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
		if args[0] == "--json" && r.code == ExitInternal && !strings.Contains(string(r.stdout), `"code":"database_wal_deleted"`) {
			t.Fatalf("%v: --json stdout %q", args, r.stdout)
		}
	}
	// The holder itself names it too, through the same check verify runs.
	if d, err := holder.CheckIntegrity(context.Background()); err != nil || len(d) != 1 || d[0].Part != "records.db-wal" {
		t.Fatalf("holder's check: %v, %v", d, err)
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, dir, env, nil, "verify"); r.code != 0 {
		t.Fatalf("verify after the holder exited: %d %s%s", r.code, r.stdout, r.stderr)
	}
	ls := runBinary(t, dir, env, nil, "ls", "--json")
	held := runBinary(t, dir, env, nil, "ls", "--json", "--session", "s2")
	if n, m := bytes.Count(ls.stdout, []byte("\n")), bytes.Count(held.stdout, []byte("\n")); ls.code != 0 || n != 3 || m != 1 {
		t.Fatalf("ls after the holder exited: exit %d, %d+%d records, want 3+1 (none lost)", ls.code, n, m)
	}
}
