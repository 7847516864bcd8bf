package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

func TestRehydrateRanges(t *testing.T) {
	ws := newWorkspace(t)
	in := randomBytes(10000, 3)
	ref := offloadRef(t, ws, in).String()
	cases := []struct {
		name  string
		flags []string
		want  []byte
	}{
		{"whole", nil, in},
		{"offset", []string{"--offset", "9000"}, in[9000:]},
		{"offset and length", []string{"--offset=100", "--length=50"}, in[100:150]},
		{"length past the end", []string{"--offset", "9990", "--length", "500"}, in[9990:]},
		{"offset at the end", []string{"--offset", "10000"}, nil},
		{"offset past the end", []string{"--offset", "20000", "--length", "5"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"rehydrate", ref, "--budget", "10000"}, c.flags...)
			r := run(t, host(ws, args...)...)
			wantCode(t, r, ExitOK)
			if !bytes.Equal([]byte(r.stdout), c.want) {
				t.Fatalf("got %d bytes, want %d", len(r.stdout), len(c.want))
			}
			js := run(t, host(ws, append(args, "--json")...)...)
			wantCode(t, js, ExitOK)
			got, err := base64.StdEncoding.DecodeString(str(t, decodeObject(t, js.stdout)["content_base64"]))
			if err != nil || !bytes.Equal(got, c.want) {
				t.Fatalf("--json got %d bytes (err %v), want %d", len(got), err, len(c.want))
			}
		})
	}
	// The budget applies to the clamped range: exactly equal resolves.
	wantCode(t, run(t, host(ws, "rehydrate", ref, "--budget", "50", "--offset", "9950")...), ExitOK)
	wantCode(t, run(t, host(ws, "rehydrate", ref, "--budget", "49", "--offset", "9950")...), ExitOverBudget)
}

func TestRehydrateOverBudget(t *testing.T) {
	ws := newWorkspace(t)
	ref := offloadRef(t, ws, randomBytes(123456, 4)).String()
	r := run(t, host(ws, "rehydrate", ref, "--budget", "1000")...)
	wantCode(t, r, ExitOverBudget)
	if want := "hybridctx: over_budget (budget_exceeded): the range is 123456 bytes, the budget 1000; use --offset/--length\n"; r.stderr != want || r.stdout != "" {
		t.Fatalf("stdout %q stderr %q, want stderr %q", r.stdout, r.stderr, want)
	}
	js := run(t, host(ws, "--json", "rehydrate", ref, "--budget", "1000")...)
	wantCode(t, js, ExitOverBudget)
	m := decodeObject(t, js.stdout)
	wantKeys(t, m, "outcome", "reason", "diagnostics")
	if str(t, m["outcome"]) != "over_budget" || js.stderr != "" {
		t.Fatalf("--json %q stderr %q", js.stdout, js.stderr)
	}
}

func TestRehydrateMalformedReference(t *testing.T) {
	ws := existingWorkspace(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	for _, bad := range []string{"nope", "ARTIFACT://sha256/00", artifact.Prefix + "ABCDEF"} {
		r := run(t, host(ws, "--events", events, "rehydrate", bad, "--budget", "10")...)
		wantCode(t, r, ExitInvalidReference)
		wantOneErrorLine(t, r, "invalid_reference (malformed_reference)")
	}
	ev := readEvents(t, events)
	if len(ev) != 3 {
		t.Fatalf("%d events, want one per call", len(ev))
	}
	for _, e := range ev {
		if e.Type != "rehydration_decision" || string(e.Diagnostics["reference"]) != "null" ||
			str(t, e.Diagnostics["outcome"]) != "invalid_reference" {
			t.Errorf("event %+v", e)
		}
	}
	js := run(t, host(ws, "--json", "rehydrate", "nope", "--budget", "10")...)
	wantCode(t, js, ExitInvalidReference)
	m := decodeObject(t, js.stdout)
	wantKeys(t, m, "outcome", "reason", "diagnostics")
	if js.stderr != "" {
		t.Errorf("--json stderr %q", js.stderr)
	}
}

func TestRehydrateUnauthorized(t *testing.T) {
	ws := newWorkspace(t)
	in := randomBytes(5000, 5)
	ref := offloadRef(t, ws, in).String()
	other := []string{"--workspace", ws, "--user", "ada", "--workflow", "triage", "--session", "s2"}
	minted := run(t, append(other, "rehydrate", ref, "--budget", "10000")...)
	wantCode(t, minted, ExitUnauthorized)
	wantOneErrorLine(t, minted, "unauthorized (owner_mismatch)")
	never := run(t, append(other, "rehydrate", artifact.RefOf([]byte("never stored")).String(), "--budget", "10000")...)
	wantCode(t, never, ExitUnauthorized)
	if minted.stderr != never.stderr {
		t.Fatalf("another owner's reference and an unknown one differ:\n%q\n%q", minted.stderr, never.stderr)
	}
}

func TestRehydrateMissingAndStale(t *testing.T) {
	ws := newWorkspace(t)
	in := randomBytes(5000, 6)
	ref := offloadRef(t, ws, in)
	path := bodyPath(ws, ref)

	// Tamper: same size, one byte flipped.
	tampered := append([]byte(nil), in...)
	tampered[2500] ^= 0xff
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	r := run(t, host(ws, "rehydrate", ref.String(), "--budget", "10000")...)
	wantCode(t, r, ExitStale)
	wantOneErrorLine(t, r, "stale (digest_mismatch)")
	// A range away from the tampered byte is refused too.
	wantCode(t, run(t, host(ws, "rehydrate", ref.String(), "--budget", "10", "--length", "10")...), ExitStale)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r = run(t, host(ws, "rehydrate", ref.String(), "--budget", "10000")...)
	wantCode(t, r, ExitMissing)
	wantOneErrorLine(t, r, "missing (body_missing)")

	// Offloading the same content again restores it.
	offloadRef(t, ws, in)
	r = run(t, host(ws, "rehydrate", ref.String(), "--budget", strconv.Itoa(len(in)))...)
	wantCode(t, r, ExitOK)
	if !bytes.Equal([]byte(r.stdout), in) {
		t.Fatal("restored body differs")
	}
}

func TestRehydrateUsageErrors(t *testing.T) {
	ws := newWorkspace(t)
	ref := artifact.RefOf([]byte("x")).String()
	cases := map[string][]string{
		"budget missing":      {"rehydrate", ref},
		"budget zero":         {"rehydrate", ref, "--budget", "0"},
		"budget negative":     {"rehydrate", ref, "--budget=-5"},
		"budget not a number": {"rehydrate", ref, "--budget", "lots"},
		"negative offset":     {"rehydrate", ref, "--budget", "5", "--offset=-1"},
		"negative length":     {"rehydrate", ref, "--budget", "5", "--length", "-1"},
		"no reference":        {"rehydrate", "--budget", "5"},
		"two references":      {"rehydrate", ref, ref, "--budget", "5"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			r := run(t, host(ws, args...)...)
			wantCode(t, r, ExitUsage)
			wantOneErrorLine(t, r)
		})
	}
}

// tamperOnWrite rewrites one byte of a body file in place on the first
// write it receives, so the body changes while the copy is under way.
type tamperOnWrite struct {
	bytes.Buffer
	t    *testing.T
	path string
	done bool
}

func (w *tamperOnWrite) Write(p []byte) (int, error) {
	if !w.done {
		w.done = true
		if err := os.Chmod(w.path, 0o600); err != nil {
			w.t.Error(err)
		}
		f, err := os.OpenFile(w.path, os.O_WRONLY, 0)
		if err != nil {
			w.t.Error(err)
		} else {
			if _, err := f.WriteAt([]byte{'!'}, 0); err != nil {
				w.t.Error(err)
			}
			_ = f.Close()
		}
	}
	return w.Buffer.Write(p)
}

func TestRehydrateBodyChangedDuringCopySaysSo(t *testing.T) {
	ws := newWorkspace(t)
	in := randomBytes(300000, 11)
	ref := offloadRef(t, ws, in)
	out := &tamperOnWrite{t: t, path: bodyPath(ws, ref)}
	var errb bytes.Buffer
	code := Main(context.Background(), host(ws, "rehydrate", ref.String(), "--budget", "300000"),
		Env{Stdout: out, Stderr: &errb})
	if code != ExitInternal {
		t.Fatalf("exit %d, want %d; stderr %q", code, ExitInternal, errb.String())
	}
	msg := errb.String()
	if !strings.Contains(msg, "changed while it was read") || !strings.Contains(msg, "do not trust") ||
		strings.Contains(msg, "incomplete") {
		t.Fatalf("stderr %q: want it to say the body changed and the output must not be trusted", msg)
	}
	if out.Len() == 0 {
		t.Fatal("nothing was written before the change was detected")
	}
}
