package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

// verifyJSON runs verify --json (no owner) and decodes its summary.
func verifyJSON(t *testing.T, ws string, extra ...string) (int, verifyReport) {
	t.Helper()
	r := run(t, append([]string{"verify", "--workspace", ws, "--json"}, extra...)...)
	if r.stderr != "" {
		t.Fatalf("verify stderr %q", r.stderr)
	}
	m := decodeObject(t, r.stdout)
	wantKeys(t, m, "bodies", "corrupt", "missing", "unsafe_permissions", "database", "orphaned", "repaired", "repair_failed")
	for _, k := range []string{"corrupt", "missing", "unsafe_permissions", "database", "repair_failed"} {
		if string(m[k]) == "null" {
			t.Errorf("%s is null, want a list", k)
		}
	}
	var rep verifyReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	return r.code, rep
}

// tamper rewrites a read-only body with other bytes and makes it read-only
// again.
func tamper(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyClean(t *testing.T) {
	ws := newWorkspace(t)
	a := randomBytes(1000, 10)
	offloadRef(t, ws, a)
	offloadRef(t, ws, randomBytes(1000, 11))
	// The same content for a second owner: one body, two records.
	withInput(t, a, "--workspace", ws, "--user", "bob", "--workflow", "w", "--session", "s", "offload", "--threshold", "10")
	// An orphan: a valid body no record points at.
	orphan := []byte(strings.Repeat("orphan", 20))
	if err := os.WriteFile(bodyPath(ws, artifact.RefOf(orphan)), orphan, 0o400); err != nil {
		t.Fatal(err)
	}
	code, rep := verifyJSON(t, ws)
	if code != ExitOK || rep.Bodies != 3 || rep.Orphaned != 1 || len(rep.Corrupt)+len(rep.Missing)+len(rep.UnsafePermissions)+rep.Repaired != 0 {
		t.Fatalf("exit %d, report %+v", code, rep)
	}
	r := run(t, "verify", "--workspace", ws)
	wantCode(t, r, ExitOK)
	if r.stdout != "3 bodies: 0 corrupt, 0 missing, 0 unsafe permissions, 1 orphaned; 0 repaired\n" {
		t.Errorf("text %q", r.stdout)
	}
}

func TestVerifyCorruptMissingUnsafe(t *testing.T) {
	ws := newWorkspace(t)
	corrupt := offloadRef(t, ws, randomBytes(2000, 12))
	missing := randomBytes(2000, 13)
	missingRef := offloadRef(t, ws, missing)
	withInput(t, missing, "--workspace", ws, "--user", "bob", "--workflow", "w", "--session", "s", "offload", "--threshold", "10")
	unsafe := offloadRef(t, ws, randomBytes(2000, 14))

	tamper(t, bodyPath(ws, corrupt), randomBytes(2000, 99))
	if err := os.Remove(bodyPath(ws, missingRef)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bodyPath(ws, unsafe), 0o644); err != nil {
		t.Fatal(err)
	}
	code, rep := verifyJSON(t, ws)
	if code != ExitDamage {
		t.Fatalf("exit %d, want %d", code, ExitDamage)
	}
	unsafePath := filepath.ToSlash(filepath.Join("sha256", unsafe.Hex()))
	if strings.Join(rep.Corrupt, ",") != corrupt.String() ||
		strings.Join(rep.Missing, ",") != missingRef.String() || // once, though two owners point at it
		strings.Join(rep.UnsafePermissions, ",") != unsafePath ||
		rep.Bodies != 2 || rep.Repaired != 0 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(bodyPath(ws, corrupt)); err != nil {
		t.Errorf("verify without --repair removed the corrupt body: %v", err)
	}
	r := run(t, "verify", "--workspace", ws)
	wantCode(t, r, ExitDamage)
	for _, want := range []string{"corrupt " + corrupt.String() + "\n", "missing " + missingRef.String() + "\n",
		"unsafe_permissions " + unsafePath + "\n", "2 bodies: 1 corrupt, 1 missing, 1 unsafe permissions, 0 orphaned; 0 repaired\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text %q lacks %q", r.stdout, want)
		}
	}

	// Permissions alone are damage too, and so is an open workspace root.
	ws2 := newWorkspace(t)
	offloadRef(t, ws2, randomBytes(100, 15))
	if code, _ := verifyJSON(t, ws2); code != ExitOK {
		t.Fatalf("fresh workspace: exit %d", code)
	}
	if err := os.Chmod(ws2, 0o755); err != nil {
		t.Fatal(err)
	}
	code, rep = verifyJSON(t, ws2)
	if code != ExitDamage || strings.Join(rep.UnsafePermissions, ",") != "." {
		t.Fatalf("exit %d, report %+v", code, rep)
	}
}

func TestVerifyRepairThenRestore(t *testing.T) {
	ws := newWorkspace(t)
	in := randomBytes(4000, 16)
	ref := offloadRef(t, ws, in)
	tamper(t, bodyPath(ws, ref), bytes.Repeat([]byte("!"), 10))

	code, rep := verifyJSON(t, ws, "--repair")
	if code != ExitDamage || rep.Repaired != 1 || strings.Join(rep.Corrupt, ",") != ref.String() {
		t.Fatalf("repair: exit %d, report %+v", code, rep)
	}
	if _, err := os.Stat(bodyPath(ws, ref)); !os.IsNotExist(err) {
		t.Fatalf("corrupt body not deleted (stat err %v)", err)
	}
	wantCode(t, run(t, host(ws, "rehydrate", ref.String(), "--budget", "4000")...), ExitMissing)
	code, rep = verifyJSON(t, ws)
	if code != ExitDamage || strings.Join(rep.Missing, ",") != ref.String() {
		t.Fatalf("after repair: exit %d, report %+v", code, rep)
	}

	r := withInput(t, in, host(ws, "--json", "offload", "--threshold", "10")...)
	wantCode(t, r, ExitOK)
	m := decodeObject(t, r.stdout)
	if str(t, m["outcome"]) != "offloaded" || str(t, m["reason"]) != "replaced_corrupt_body" {
		t.Errorf("restore offload %s/%s", m["outcome"], m["reason"])
	}
	code, rep = verifyJSON(t, ws)
	if code != ExitOK || rep.Bodies != 1 {
		t.Fatalf("after restore: exit %d, report %+v", code, rep)
	}
	got := run(t, host(ws, "rehydrate", ref.String(), "--budget", "4000")...)
	wantCode(t, got, ExitOK)
	if got.stdout != string(in) {
		t.Fatal("restored bytes differ")
	}
}

func TestVerifyMem(t *testing.T) {
	r := run(t, "verify", "--workspace", "mem://")
	wantCode(t, r, ExitOK)
	if !strings.Contains(r.stdout, "0 bodies") || !strings.Contains(r.stdout, "permissions not checked") ||
		!strings.Contains(r.stdout, "database not checked") {
		t.Fatalf("stdout %q", r.stdout)
	}
	code, rep := verifyJSON(t, "mem://")
	if code != ExitOK || len(rep.UnsafePermissions) != 0 {
		t.Fatalf("exit %d report %+v", code, rep)
	}
}

// TestVerifyRepairOfADirectoryAtABodyName plants a non-empty directory where
// a body should be: verify --repair reports it like any other damage (exit
// 10, the JSON summary, repair_failed) instead of stopping with exit 1 and
// raw OS text, and still repairs the other corrupt body.
func TestVerifyRepairOfADirectoryAtABodyName(t *testing.T) {
	ws := newWorkspace(t)
	planted := offloadRef(t, ws, randomBytes(3000, 17))
	other := offloadRef(t, ws, randomBytes(3000, 18))
	if err := os.Chmod(bodyPath(ws, planted), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(bodyPath(ws, planted)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(bodyPath(ws, planted), "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	tamper(t, bodyPath(ws, other), bytes.Repeat([]byte("!"), 10))

	code, rep := verifyJSON(t, ws, "--repair")
	if code != ExitDamage || len(rep.Corrupt) != 2 || rep.Repaired != 1 ||
		strings.Join(rep.RepairFailed, ",") != planted.String() {
		t.Fatalf("exit %d, report %+v", code, rep)
	}
	if _, err := os.Stat(bodyPath(ws, other)); !os.IsNotExist(err) {
		t.Fatalf("the other corrupt body was not deleted (stat err %v)", err)
	}
	r := run(t, "verify", "--repair", "--workspace", ws)
	wantCode(t, r, ExitDamage)
	if r.stderr != "" || !strings.Contains(r.stdout, "corrupt "+planted.String()+" (could not be deleted)\n") ||
		!strings.Contains(r.stdout, "1 could not be deleted") || strings.Contains(r.stdout, ws) {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
}
