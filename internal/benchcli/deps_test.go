package benchcli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/internal/cli"
)

// TestProductBinaryLeavesTheBenchmarkOut: the hybridctx binary links
// neither this package nor the workloads it measures, and its command line
// has no bench command; hybridctx-bench is built on its own.
func TestProductBinaryLeavesTheBenchmarkOut(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", "../../cmd/hybridctx").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		switch d {
		case "github.com/hybridctx/hybridctx/internal/benchcli", "github.com/hybridctx/hybridctx/internal/workload":
			t.Errorf("cmd/hybridctx links %s", d)
		}
	}
	var stderr strings.Builder
	if code := cli.Main(t.Context(), []string{"bench"}, cli.Env{Stderr: &stderr}); code != cli.ExitUsage ||
		!strings.Contains(stderr.String(), `unknown command "bench"`) {
		t.Errorf("hybridctx bench: exit %d, %q", code, stderr.String())
	}
}
