package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/internal/procstat"
)

// TestMCPQueryMemory: one stdio client sends N query_artifact calls
// without waiting for the answers, half of them filters that build values
// up to the query memory bound, half over an 8 MB stored result. The
// proxy's peak resident size stays flat past its query slots and under
// 512 MiB, for N = 1, 16 and 128; every call is answered (a result, or
// view_failed: limit_exceeded or busy).
func TestMCPQueryMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a memory figure: not in -short")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	bin := mcpServerBin(t)
	for _, n := range []int{1, 16, 128} {
		cmd := exec.Command(binPath, "mcp", "--workspace", newWorkspace(t), "--threshold", "16384", "--", bin)
		cmd.Env = append(os.Environ(), EnvUser+"=ada")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "query-memory", Version: "1"}, nil).
			Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "blocks", Arguments: map[string]any{"n": 2000, "size": 4096}})
		if err != nil || len(res.Content) != 2 {
			t.Fatalf("blocks: %v", err)
		}
		ref := res.Content[1].(*mcp.ResourceLink).URI
		var mu sync.Mutex
		answers := map[string]int{}
		var wg sync.WaitGroup
		for i := range n {
			filter := `[.[] | .text | explode] | length`
			if i%2 == 1 {
				filter = `[range(1e8) | tostring] | length`
			}
			wg.Go(func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "query_artifact",
					Arguments: map[string]any{"reference": ref, "filter": filter}})
				key := "error"
				if err == nil {
					key = "result"
					if text := firstText(res); res.IsError {
						_, rest, _ := strings.Cut(text, "(")
						key, _, _ = strings.Cut(rest, ")")
					}
				}
				mu.Lock()
				answers[key]++
				mu.Unlock()
			})
		}
		wg.Wait()
		peak := procPeak(t, cmd.Process.Pid)
		_ = cs.Close()
		t.Logf("N=%d: proxy peak RSS %d MiB; answers %v", n, peak>>20, answers)
		if answers["error"] > 0 {
			t.Errorf("N=%d: %d calls got no answer", n, answers["error"])
		}
		if peak > 512<<20 {
			t.Errorf("N=%d: proxy peak RSS %d MiB, over 512 MiB", n, peak>>20)
		}
	}
}

// procPeak reads a process's peak resident size (VmHWM), in bytes.
func procPeak(t *testing.T, pid int) int64 {
	t.Helper()
	n, err := procstat.Bytes(pid, "VmHWM")
	if errors.Is(err, procstat.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}
