package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/dirstore"
)

// gcWorkspace builds a workspace with, 40 days ago: a record (and body) last
// used then, and an orphan body; and now: a record and an orphan. It returns
// the workspace and the four references in that order.
func gcWorkspace(t *testing.T) (ws string, oldRec, oldOrphan, fresh, freshOrphan artifact.Ref) {
	t.Helper()
	ws = newWorkspace(t)
	old := randomBytes(2000, 1)
	oldRec = offloadRef(t, ws, old)
	fresh = offloadRef(t, ws, randomBytes(3000, 2))
	orphan := func(b []byte, when time.Time) artifact.Ref {
		ref := artifact.RefOf(b)
		if err := os.WriteFile(bodyPath(ws, ref), b, 0o400); err != nil {
			t.Fatal(err)
		}
		_ = os.Chtimes(bodyPath(ws, ref), when, when)
		return ref
	}
	past := time.Now().Add(-40 * 24 * time.Hour)
	oldOrphan = orphan(randomBytes(500, 3), past)
	freshOrphan = orphan(randomBytes(700, 4), time.Now())
	_ = os.Chtimes(bodyPath(ws, oldRec), past, past)
	s, err := dirstore.Open(context.Background(), ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	owner := artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}
	if err := s.TouchRecord(context.Background(), owner, oldRec, past); err != nil {
		t.Fatal(err)
	}
	return ws, oldRec, oldOrphan, fresh, freshOrphan
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func TestGCDryRunThenReal(t *testing.T) {
	ws, oldRec, oldOrphan, fresh, freshOrphan := gcWorkspace(t)
	r := run(t, "gc", "--workspace", ws, "--max-age", "30d", "--dry-run", "--json")
	wantCode(t, r, ExitOK)
	m := decodeObject(t, r.stdout)
	wantKeys(t, m, "dry_run", "records_deleted", "bodies_scanned", "bodies_deleted", "bytes_deleted",
		"bodies_referenced", "bodies_recent")
	var rep struct {
		DryRun           bool  `json:"dry_run"`
		RecordsDeleted   int64 `json:"records_deleted"`
		BodiesScanned    int64 `json:"bodies_scanned"`
		BodiesDeleted    int64 `json:"bodies_deleted"`
		BytesDeleted     int64 `json:"bytes_deleted"`
		BodiesReferenced int64 `json:"bodies_referenced"`
		BodiesRecent     int64 `json:"bodies_recent"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || rep.RecordsDeleted != 1 || rep.BodiesScanned != 4 || rep.BodiesDeleted != 2 ||
		rep.BytesDeleted != 2500 || rep.BodiesReferenced != 1 || rep.BodiesRecent != 1 {
		t.Fatalf("dry run = %+v", rep)
	}
	for _, ref := range []artifact.Ref{oldRec, oldOrphan, fresh, freshOrphan} {
		if !exists(t, bodyPath(ws, ref)) {
			t.Fatal("the dry run deleted a body")
		}
	}
	// stat, unlike a resolved read, does not count as a use of the record.
	wantCode(t, run(t, host(ws, "stat", oldRec.String())...), ExitOK)

	r = run(t, "gc", "--workspace", ws, "--max-age", "30d")
	wantCode(t, r, ExitOK)
	if want := "deleted 1 records and 2 bodies (2500 bytes); kept 1 referenced and 1 recent of 4 bodies\n"; r.stdout != want {
		t.Fatalf("gc output %q, want %q", r.stdout, want)
	}
	for ref, want := range map[artifact.Ref]bool{oldRec: false, oldOrphan: false, fresh: true, freshOrphan: true} {
		if exists(t, bodyPath(ws, ref)) != want {
			t.Errorf("body present = %v, want %v", !want, want)
		}
	}
	// The collected reference is unauthorized, never other bytes; the
	// kept one resolves; verify is clean.
	wantCode(t, run(t, host(ws, "rehydrate", oldRec.String(), "--budget", "4096")...), ExitUnauthorized)
	wantCode(t, run(t, host(ws, "rehydrate", fresh.String(), "--budget", "4096")...), ExitOK)
	if code, vr := verifyJSON(t, ws); code != ExitOK || len(vr.Missing) != 0 {
		t.Fatalf("verify after gc: %d %+v", code, vr)
	}
	// A second run finds nothing more.
	r = run(t, "gc", "--workspace", ws, "--max-age", "30d", "--grace", "1h")
	wantCode(t, r, ExitOK)
	if !strings.HasPrefix(r.stdout, "deleted 0 records and 0 bodies") {
		t.Fatalf("second gc: %q", r.stdout)
	}
	r = run(t, "gc", "--workspace", ws, "--max-age", "30d", "--dry-run")
	if !strings.HasPrefix(r.stdout, "would delete 0 records") {
		t.Fatalf("dry-run text: %q", r.stdout)
	}
}

func TestGCUsage(t *testing.T) {
	ws := newWorkspace(t)
	for _, args := range [][]string{
		{"gc"},
		{"gc", "--max-age", "30m"},
		{"gc", "--max-age", "-5d"},
		{"gc", "--max-age", "abc"},
		{"gc", "--max-age", "30d", "--grace", "10s"},
		{"gc", "--max-age", "30d", "--grace", "x"},
		{"gc", "--max-age", "30d", "extra"},
		{"gc", "--max-age", "99999999d"},
	} {
		r := run(t, append(args, "--workspace", ws)...)
		wantCode(t, r, ExitUsage)
		if r.stdout != "" {
			t.Errorf("%v: stdout %q", args, r.stdout)
		}
	}
	if exists(t, ws) {
		t.Fatal("a usage error created the workspace")
	}
}

func TestGCOtherWorkspaces(t *testing.T) {
	wantCode(t, run(t, "gc", "--workspace", "mem://", "--max-age", "1h", "--json"), ExitOK)
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wantCode(t, run(t, "gc", "--workspace", file, "--max-age", "1h"), ExitInternal)
}

func TestParseDuration(t *testing.T) {
	day := 24 * time.Hour
	good := map[string]time.Duration{
		"0": 0, "36h": 36 * time.Hour, "30d": 30 * day, "1.5d": 36 * time.Hour, "1d12h": 36 * time.Hour,
		"90m": 90 * time.Minute, "1h30m": 90 * time.Minute, "2d2d": 4 * day, "12h1d": 36 * time.Hour,
		".5d": 12 * time.Hour, "100000d": 100000 * day,
	}
	for s, want := range good {
		if got, err := parseDuration(s); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "d", "-1d", "+1d", "1", "1dd", "1x", "1..5d", "abc", " 1d", "1d ", "200000d", "106751d24h"} {
		if got, err := parseDuration(s); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", s, got)
		}
	}
}

// FuzzParseDuration: no panic; a result is never negative; without days
// it agrees with time.ParseDuration; n days is exactly n×24h.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30d", "1d12h", "36h", "1.5d", "0", "-1h", "1e3d", "9223372036854775807ns", "106751d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseDuration(s)
		if err != nil {
			return
		}
		if got < 0 {
			t.Fatalf("parseDuration(%q) = %v, negative", s, got)
		}
		if !strings.Contains(s, "d") {
			if want, err := time.ParseDuration(s); err != nil || want != got {
				t.Fatalf("parseDuration(%q) = %v; time.ParseDuration = %v, %v", s, got, want, err)
			}
		}
	})
}
