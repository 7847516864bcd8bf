package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

var recordFields = []string{"reference", "size", "kind", "created_at", "last_used_at", "tool", "call_id"}

func TestLs(t *testing.T) {
	ws := existingWorkspace(t)
	empty := run(t, host(ws, "ls")...)
	wantCode(t, empty, ExitOK)
	if got := strings.Fields(empty.stdout); strings.Join(got, " ") != strings.Join(recordFields, " ") {
		t.Fatalf("empty ls %q, want the header only", empty.stdout)
	}

	text := offloadRef(t, ws, bytes.Repeat([]byte("text line\n"), 50), "--tool", "grep", "--call-id", "c1")
	js := offloadRef(t, ws, []byte(`{"k": [1, 2, 3], "pad": "`+strings.Repeat("p", 100)+`"}`), "--tool", "api", "--call-id", "c2")
	bin := offloadRef(t, ws, randomBytes(300, 7), "--tool", "dump", "--call-id", "c3")
	// Another owner's record is never listed.
	withInput(t, randomBytes(300, 8), "--workspace", ws, "--user", "eve", "--workflow", "triage", "--session", "s1", "offload", "--threshold", "10")

	r := run(t, host(ws, "ls", "--json")...)
	wantCode(t, r, ExitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("ls --json %q, want 3 lines", r.stdout)
	}
	want := map[string][3]string{
		text.String(): {"text", "grep", "c1"},
		js.String():   {"json", "api", "c2"},
		bin.String():  {"binary", "dump", "c3"},
	}
	for _, l := range lines {
		m := decodeObject(t, l)
		wantKeys(t, m, recordFields...)
		ref := str(t, m["reference"])
		w, ok := want[ref]
		if !ok {
			t.Fatalf("unexpected record %s", l)
		}
		if got := [3]string{str(t, m["kind"]), str(t, m["tool"]), str(t, m["call_id"])}; got != w {
			t.Errorf("%s: kind/tool/call_id %v, want %v", ref, got, w)
		}
		for _, k := range []string{"created_at", "last_used_at"} {
			s := str(t, m[k])
			if _, err := time.Parse(hybridctx.TimeLayout, s); err != nil || len(s) != len(hybridctx.TimeLayout) {
				t.Errorf("%s %q not in %s", k, s, hybridctx.TimeLayout)
			}
		}
		delete(want, ref)
	}

	tr := run(t, host(ws, "ls")...)
	wantCode(t, tr, ExitOK)
	rows := strings.Split(strings.TrimSuffix(tr.stdout, "\n"), "\n")
	if len(rows) != 4 {
		t.Fatalf("ls %q, want a header and 3 rows", tr.stdout)
	}
	col := strings.Index(rows[0], "size")
	for _, row := range rows[1:] {
		f := strings.Fields(row)
		if len(f) != len(recordFields) || !strings.HasPrefix(f[0], artifact.Prefix) {
			t.Errorf("row %q", row)
		}
		if strings.Index(row[len(f[0]):], f[1])+len(f[0]) != col {
			t.Errorf("row %q: size not aligned under its header", row)
		}
	}
}

func TestStat(t *testing.T) {
	ws := newWorkspace(t)
	in := bytes.Repeat([]byte("s"), 777)
	ref := offloadRef(t, ws, in, "--tool", "cat", "--call-id", "c9").String()

	r := run(t, host(ws, "stat", ref)...)
	wantCode(t, r, ExitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != len(recordFields) {
		t.Fatalf("stat %q", r.stdout)
	}
	for i, k := range recordFields {
		if !strings.HasPrefix(lines[i], k+": ") {
			t.Errorf("line %d %q, want key %s", i, lines[i], k)
		}
	}
	if lines[0] != "reference: "+ref || lines[1] != "size: 777" || lines[2] != "kind: text" || lines[5] != "tool: cat" || lines[6] != "call_id: c9" {
		t.Errorf("stat %q", r.stdout)
	}

	js := run(t, host(ws, "--json", "stat", ref)...)
	wantCode(t, js, ExitOK)
	m := decodeObject(t, js.stdout)
	wantKeys(t, m, recordFields...)
	if string(m["size"]) != "777" {
		t.Errorf("size %s", m["size"])
	}

	bad := run(t, host(ws, "stat", "artifact://sha256/xyz")...)
	wantCode(t, bad, ExitInvalidReference)
	wantOneErrorLine(t, bad, "invalid_reference")

	other := []string{"--workspace", ws, "--user", "ada", "--workflow", "other", "--session", "s1", "stat"}
	minted := run(t, append(other, ref)...)
	wantCode(t, minted, ExitUnauthorized)
	wantOneErrorLine(t, minted, "unauthorized")
	never := run(t, append(other, artifact.RefOf([]byte("never")).String())...)
	wantCode(t, never, ExitUnauthorized)
	if never.stderr != minted.stderr {
		t.Errorf("stat messages differ: %q vs %q", minted.stderr, never.stderr)
	}
}
