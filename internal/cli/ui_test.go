package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUIRefusals: the ui command's usage errors start nothing.
func TestUIRefusals(t *testing.T) {
	ws := existingWorkspace(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"events to stderr", nil, host(ws, "--events", "-", "ui"), ExitUsage, "--events - is refused"},
		{"off loopback without a token", nil, host(ws, "ui", "--listen", "0.0.0.0:0"), ExitUsage, "--token-env"},
		{"all interfaces without a token", nil, host(ws, "ui", "--listen", ":0"), ExitUsage, "--token-env"},
		{"unset token", nil, host(ws, "ui", "--listen", "0.0.0.0:0", "--token-env", "UI_TOKEN"), ExitUsage, "unset or empty"},
		{"short token", map[string]string{"UI_TOKEN": "short"}, host(ws, "ui", "--token-env", "UI_TOKEN"), ExitUsage, "at least 16 bytes"},
		{"no owner", nil, []string{"--workspace", ws, "ui"}, ExitUsage, "missing owner"},
		{"bad budget", nil, host(ws, "ui", "--budget", "0"), ExitUsage, "--budget"},
		{"cannot listen", nil, host(ws, "--events", events, "ui", "--listen", "127.0.0.1:99999"), ExitUsage, "cannot listen"},
		{"no workspace", nil, host(filepath.Join(t.TempDir(), "none"), "ui"), ExitInternal, "no workspace at"},
		{"an argument", nil, host(ws, "ui", "extra"), ExitUsage, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := invocation{env: c.env}.run(t, c.args...)
			wantCode(t, r, c.code)
			if !strings.Contains(r.stderr, c.want) {
				t.Errorf("stderr %q, want %q", r.stderr, c.want)
			}
		})
	}
}

func TestUIHelpListsExitCodes(t *testing.T) {
	r := run(t, "ui", "--help")
	wantCode(t, r, ExitOK)
	for _, want := range []string{"read-only", "--token-env", "Exit codes", "usage error"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
