package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

// result is what one in-process Main call produced.
type result struct {
	code   int
	stdout string
	stderr string
}

// invocation describes one in-process Main call.
type invocation struct {
	env   map[string]string
	stdin io.Reader
}

// run calls Main in process with args, no environment and empty stdin.
func run(t *testing.T, args ...string) result {
	t.Helper()
	return invocation{}.run(t, args...)
}

func (inv invocation) run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	stdin := inv.stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code := Main(context.Background(), args, Env{
		Stdin:  stdin,
		Stdout: &out,
		Stderr: &errb,
		Getenv: func(k string) string { return inv.env[k] },
	})
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// withInput runs with stdin set to b.
func withInput(t *testing.T, b []byte, args ...string) result {
	t.Helper()
	return invocation{stdin: bytes.NewReader(b)}.run(t, args...)
}

// owner flags of the default test owner.
func ownerArgs() []string {
	return []string{"--user", "ada", "--workflow", "triage", "--session", "s1"}
}

// host returns the workspace and owner flags followed by args.
func host(ws string, args ...string) []string {
	return append(append([]string{"--workspace", ws}, ownerArgs()...), args...)
}

// newWorkspace returns a fresh directory workspace path.
func newWorkspace(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "ws")
}

// existingWorkspace returns a directory workspace that exists and is empty:
// only the commands that write create one.
func existingWorkspace(t *testing.T) string {
	t.Helper()
	ws := newWorkspace(t)
	r := withInput(t, []byte("x"), host(ws, "offload", "--threshold", "16")...)
	wantCode(t, r, ExitOK)
	return ws
}

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// wantCode fails the test unless r exited with code.
func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %.400q\nstderr: %q", r.code, code, r.stdout, r.stderr)
	}
}

// wantOneErrorLine fails unless stderr is exactly one "hybridctx: " line
// containing every fragment, and stdout is empty.
func wantOneErrorLine(t *testing.T, r result, fragments ...string) {
	t.Helper()
	if r.stdout != "" {
		t.Errorf("stdout = %.200q, want empty", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "hybridctx: ") || !strings.HasSuffix(r.stderr, "\n") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("stderr = %q, want one line starting with hybridctx: ", r.stderr)
	}
	for _, f := range fragments {
		if !strings.Contains(r.stderr, f) {
			t.Errorf("stderr = %q, want it to contain %q", r.stderr, f)
		}
	}
}

// offloadRef offloads b with a small threshold and returns its reference.
func offloadRef(t *testing.T, ws string, b []byte, extra ...string) artifact.Ref {
	t.Helper()
	r := withInput(t, b, host(ws, append([]string{"offload", "--threshold", "16"}, extra...)...)...)
	wantCode(t, r, ExitOK)
	ref, err := artifact.ParseRef(strings.SplitN(r.stdout, "\n", 2)[0])
	if err != nil {
		t.Fatalf("first notice line of %q: %v", r.stdout, err)
	}
	return ref
}

// bodyPath returns the file of ref's body in a directory workspace.
func bodyPath(ws string, ref artifact.Ref) string {
	return filepath.Join(ws, "sha256", ref.Hex())
}

// decodeObject parses one JSON object, failing on anything else.
func decodeObject(t *testing.T, s string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not a JSON object: %v\n%q", err, s)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value in %q", s)
	}
	return m
}

// wantKeys fails unless m has exactly the keys.
func wantKeys(t *testing.T, m map[string]json.RawMessage, keys ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	want := append([]string(nil), keys...)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("keys %v, want %v", got, want)
	}
}

// str decodes a JSON string value, failing on null or anything else.
func str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil || s == nil {
		t.Fatalf("%s is not a JSON string", raw)
	}
	return *s
}

// event is the part of a progress event the tests read.
type event struct {
	Type        string                     `json:"type"`
	Sequence    uint64                     `json:"sequence"`
	Time        string                     `json:"time"`
	RunID       string                     `json:"run_id"`
	AgentID     string                     `json:"agent_id"`
	Parent      *string                    `json:"parent_agent_id"`
	Depth       int                        `json:"depth"`
	Diagnostics map[string]json.RawMessage `json:"diagnostics"`
}

// parseEvents parses JSON Lines, failing on any line that is not an event.
func parseEvents(t *testing.T, s string) []event {
	t.Helper()
	var out []event
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var e event
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("event line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// readEvents parses the events file at path ("" content when absent).
func readEvents(t *testing.T, path string) []event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return parseEvents(t, string(b))
}

// spyReader records whether it was read.
type spyReader struct{ read bool }

func (s *spyReader) Read(p []byte) (int, error) {
	s.read = true
	return 0, io.EOF
}
