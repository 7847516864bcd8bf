package benchcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/internal/cli"
	"github.com/hybridctx/hybridctx/internal/workload"
)

// TestBenchWorkloadAcceptsWhatTheLibraryAccepts: a workload line may carry
// keys of its own (ignored) and call ids and tool names as long as a
// workspace record stores; one byte more is refused, naming the line.
func TestBenchWorkloadAcceptsWhatTheLibraryAccepts(t *testing.T) {
	dir := t.TempDir()
	line := func(tool, callID string, extra map[string]any) string {
		m := map[string]any{"session": "s1", "tool": tool, "call_id": callID, "content": strings.Repeat("log line\n", 600)}
		for k, v := range extra {
			m[k] = v
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	good := filepath.Join(dir, "good.jsonl")
	body := line("grep", strings.Repeat("c", 1536), map[string]any{"kind": "text"}) +
		line(strings.Repeat("t", workload.MaxToolNameLen), strings.Repeat("é", workload.MaxCallIDLen/2), map[string]any{"kind": "log", "meta": map[string]any{"n": 1}}) +
		line("ls", "", nil)
	if err := os.WriteFile(good, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "--workload", good, "--threshold", "1024")
	wantCode(t, r, cli.ExitOK)
	out := benchOut(t, r)
	if out.Results != 3 {
		t.Fatalf("replayed %d results, want 3", out.Results)
	}
	if f := out.DecisionLatency.HashFloor; f == nil || !strings.Contains(r.stdout, `"hash_floor_us":{"p50_us":`) {
		t.Errorf("decision latency without its hash floor: %+v", out.DecisionLatency)
	}
	for name, l := range map[string]string{
		"call id": line("grep", strings.Repeat("c", workload.MaxCallIDLen+1), nil),
		"tool":    line(strings.Repeat("t", workload.MaxToolNameLen+1), "c", nil),
	} {
		bad := filepath.Join(dir, "bad.jsonl")
		if err := os.WriteFile(bad, []byte(line("ls", "", nil)+l), 0o600); err != nil {
			t.Fatal(err)
		}
		r := run(t, "--workload", bad, "--workspace", "mem://")
		if r.code == cli.ExitOK || !strings.Contains(r.stderr, "line 2") {
			t.Errorf("%s one byte too long: exit %d, %q", name, r.code, r.stderr)
		}
	}
	help := run(t, "--help")
	if !strings.Contains(help.stdout, "Other keys are ignored") || !strings.Contains(help.stdout, "4096 bytes") {
		t.Errorf("bench --help does not say what a workload line may hold:\n%s", help.stdout)
	}
}
