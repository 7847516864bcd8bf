package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

const mib3 = 3 << 20

func TestRoundTrip3MiBOffloaded(t *testing.T) {
	ws := newWorkspace(t)
	in := randomBytes(mib3, 1)
	r := withInput(t, in, host(ws, "offload", "--threshold", "4096")...)
	wantCode(t, r, ExitOK)
	lines := strings.Split(r.stdout, "\n")
	if len(lines) != 4 || lines[3] != "" {
		t.Fatalf("notice = %q, want three lines and one newline", r.stdout)
	}
	want := artifact.RefOf(in)
	if lines[0] != want.String() {
		t.Fatalf("reference %q, want %q", lines[0], want)
	}
	if !strings.HasPrefix(lines[1], strconv.Itoa(mib3)+" bytes, ") || !strings.Contains(lines[1], "binary") {
		t.Errorf("second notice line %q", lines[1])
	}

	got := run(t, host(ws, "rehydrate", want.String(), "--budget", strconv.Itoa(mib3))...)
	wantCode(t, got, ExitOK)
	if !bytes.Equal([]byte(got.stdout), in) || got.stderr != "" {
		t.Fatalf("rehydrated %d bytes (equal %v), stderr %q", len(got.stdout), got.stdout == string(in), got.stderr)
	}

	js := run(t, host(ws, "--json", "rehydrate", want.String(), "--budget", strconv.Itoa(mib3))...)
	wantCode(t, js, ExitOK)
	m := decodeObject(t, js.stdout)
	wantKeys(t, m, "outcome", "reason", "diagnostics", "content_base64")
	content, err := base64.StdEncoding.DecodeString(str(t, m["content_base64"]))
	if err != nil || !bytes.Equal(content, in) {
		t.Fatalf("content_base64 does not round-trip (err %v)", err)
	}

	again := withInput(t, in, host(ws, "--json", "offload", "--threshold", "4096")...)
	wantCode(t, again, ExitOK)
	if o := str(t, decodeObject(t, again.stdout)["outcome"]); o != "existing_reference" {
		t.Errorf("second offload outcome %q, want existing_reference", o)
	}
}

func TestRoundTrip3MiBInline(t *testing.T) {
	ws := newWorkspace(t)
	in := randomBytes(mib3, 2)
	r := withInput(t, in, host(ws, "offload", "--threshold", strconv.Itoa(mib3))...)
	wantCode(t, r, ExitOK)
	if !bytes.Equal([]byte(r.stdout), in) || r.stderr != "" {
		t.Fatalf("inline output differs from the input (%d bytes), stderr %q", len(r.stdout), r.stderr)
	}
	// One byte over the threshold is stored instead.
	over := withInput(t, in, host(ws, "offload", "--threshold", strconv.Itoa(mib3-1))...)
	wantCode(t, over, ExitOK)
	if !strings.HasPrefix(over.stdout, artifact.RefOf(in).String()+"\n") {
		t.Fatalf("threshold-1 output %.100q, want the notice", over.stdout)
	}
	ls := run(t, host(ws, "ls", "--json")...)
	if n := strings.Count(ls.stdout, "\n"); n != 1 {
		t.Errorf("ls lists %d records, want 1 (inline stores nothing)", n)
	}
}

func TestOffloadFromFileAndDash(t *testing.T) {
	ws := newWorkspace(t)
	in := []byte(strings.Repeat("line\n", 100))
	path := filepath.Join(t.TempDir(), "result.txt")
	if err := os.WriteFile(path, in, 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile := run(t, host(ws, "offload", path, "--threshold", "10")...)
	wantCode(t, fromFile, ExitOK)
	fromDash := withInput(t, in, host(ws, "offload", "-", "--threshold", "10")...)
	wantCode(t, fromDash, ExitOK)
	if fromFile.stdout != fromDash.stdout {
		t.Fatalf("file and stdin notices differ:\n%s\n%s", fromFile.stdout, fromDash.stdout)
	}
	if !strings.Contains(fromFile.stdout, "500 bytes, 100 lines, text") {
		t.Errorf("notice %q", fromFile.stdout)
	}
}

func TestOffloadJSONShapes(t *testing.T) {
	ws := newWorkspace(t)
	keys := []string{"outcome", "reason", "reference", "notice", "diagnostics"}

	inline := withInput(t, []byte("small"), host(ws, "--json", "offload", "--threshold", "100")...)
	wantCode(t, inline, ExitOK)
	m := decodeObject(t, inline.stdout)
	wantKeys(t, m, keys...)
	if string(m["notice"]) != "null" || string(m["reference"]) != "null" {
		t.Errorf("inline notice %s reference %s, want null, null", m["notice"], m["reference"])
	}
	if str(t, m["outcome"]) != "inline" || str(t, m["reason"]) != "below_threshold" {
		t.Errorf("inline outcome %s/%s", m["outcome"], m["reason"])
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal(m["diagnostics"], &d); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, d, "operation", "outcome", "content", "reason", "observed_bytes", "configured_bytes", "reference", "attribution")
	if string(d["configured_bytes"]) != "100" || string(d["observed_bytes"]) != "5" {
		t.Errorf("diagnostics %s", m["diagnostics"])
	}

	big := bytes.Repeat([]byte("x"), 1000)
	stored := withInput(t, big, host(ws, "--json", "offload", "--threshold", "100")...)
	wantCode(t, stored, ExitOK)
	m = decodeObject(t, stored.stdout)
	wantKeys(t, m, keys...)
	ref := str(t, m["reference"])
	if ref != artifact.RefOf(big).String() || str(t, m["outcome"]) != "offloaded" {
		t.Errorf("offloaded %s reference %s", m["outcome"], ref)
	}
	if n := str(t, m["notice"]); !strings.HasPrefix(n, ref+"\n1000 bytes, 1 lines, text") {
		t.Errorf("notice %q", n)
	}

	failed := withInput(t, big, host(ws, "--json", "offload", "--threshold", "100", "--max-bytes", "500")...)
	wantCode(t, failed, ExitFailed)
	m = decodeObject(t, failed.stdout)
	wantKeys(t, m, keys...)
	if string(m["reference"]) != "null" || str(t, m["reason"]) != "exceeds_max_artifact_size" {
		t.Errorf("failed reference %s reason %s", m["reference"], m["reason"])
	}
	// Observed bytes are what was read when the limit was crossed: at
	// least max+1, at most the input.
	if n := str(t, m["notice"]); !strings.HasPrefix(n, "hybridctx: failed (exceeds_max_artifact_size), ") ||
		!strings.Contains(n, " bytes\n") || observedInNotice(t, n) < 501 || observedInNotice(t, n) > 1000 {
		t.Errorf("failed notice %q", n)
	}
	if failed.stderr != "" {
		t.Errorf("stderr %q, want empty", failed.stderr)
	}
}

func TestOffloadFailedText(t *testing.T) {
	ws := newWorkspace(t)
	big := bytes.Repeat([]byte("y"), 2000)
	r := withInput(t, big, host(ws, "offload", "--threshold", "100", "--max-bytes", "1000")...)
	wantCode(t, r, ExitFailed)
	if !strings.HasPrefix(r.stdout, "hybridctx: failed (exceeds_max_artifact_size), ") || observedInNotice(t, r.stdout) < 1001 ||
		!strings.HasSuffix(r.stdout, "\n") || strings.Contains(r.stdout, "artifact://") {
		t.Fatalf("stdout %q", r.stdout)
	}
	if ls := run(t, host(ws, "ls", "--json")...); ls.stdout != "" {
		t.Errorf("a failed offload left a record: %q", ls.stdout)
	}
}

func TestOffloadMemWorkspace(t *testing.T) {
	r := withInput(t, bytes.Repeat([]byte("m"), 300), append([]string{"--workspace", "mem://"},
		append(ownerArgs(), "offload", "--threshold", "10")...)...)
	wantCode(t, r, ExitOK)
	if !strings.HasPrefix(r.stdout, "artifact://sha256/") {
		t.Fatalf("stdout %q", r.stdout)
	}
}

func TestOffloadToolAndCallID(t *testing.T) {
	ws := newWorkspace(t)
	offloadRef(t, ws, bytes.Repeat([]byte("t"), 100), "--tool", "grep", "--call-id=c-42")
	r := run(t, host(ws, "ls", "--json")...)
	m := decodeObject(t, r.stdout)
	if str(t, m["tool"]) != "grep" || str(t, m["call_id"]) != "c-42" {
		t.Fatalf("record %s", r.stdout)
	}
	offloadRef(t, ws, bytes.Repeat([]byte("u"), 100))
	r = run(t, host(ws, "ls", "--json")...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("ls %q", r.stdout)
	}
	var tools []string
	for _, l := range lines {
		m := decodeObject(t, l)
		tools = append(tools, str(t, m["tool"]))
		if id := str(t, m["call_id"]); id == "" {
			t.Error("empty default call id")
		}
	}
	if !strings.Contains(strings.Join(tools, ","), "cli") {
		t.Errorf("tools %v, want the default cli among them", tools)
	}
}

func TestUnreadableInputNoEvent(t *testing.T) {
	ws := newWorkspace(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	for name, path := range map[string]string{
		"absent":    filepath.Join(t.TempDir(), "nope"),
		"directory": t.TempDir(),
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, host(ws, "--events", events, "offload", path, "--threshold", "10")...)
			wantCode(t, r, ExitUsage)
			wantOneErrorLine(t, r, "cannot read the input")
			if ev := readEvents(t, events); len(ev) != 0 {
				t.Fatalf("%d events written", len(ev))
			}
		})
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("workspace created before the input was checked (stat err %v)", err)
	}
}

// observedInNotice returns N from a categorical notice "hybridctx: ..., N bytes".
func observedInNotice(t *testing.T, notice string) int {
	t.Helper()
	first, _, _ := strings.Cut(notice, "\n")
	i := strings.LastIndex(first, ", ")
	if i < 0 {
		t.Fatalf("no byte count in %q", notice)
	}
	n, err := strconv.Atoi(strings.TrimSuffix(first[i+2:], " bytes"))
	if err != nil {
		t.Fatalf("no byte count in %q", notice)
	}
	return n
}

func TestOffloadOverlongToolOrCallIDIsUsageError(t *testing.T) {
	ws := newWorkspace(t)
	long := strings.Repeat("t", artifact.MaxCallFieldLen+1)
	for _, flag := range []string{"--tool", "--call-id"} {
		spy := &spyReader{}
		r := invocation{stdin: spy}.run(t, host(ws, "offload", "--threshold", "4", flag, long)...)
		wantCode(t, r, ExitUsage)
		wantOneErrorLine(t, r, "longer than")
		if spy.read {
			t.Errorf("%s: the input was read", flag)
		}
	}
	// The exact limit stores and records.
	limit := strings.Repeat("c", artifact.MaxCallFieldLen)
	offloadRef(t, ws, randomBytes(100, 9), "--tool", limit, "--call-id", limit)
}
