package cli

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
)

// e2eSkips counts the MCP end-to-end tests skipped for want of an npm
// client or server, by the environment variable that would enable them.
var e2eSkips = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// skipE2E skips a test whose external client or server is not installed
// (fails instead when CI=true), counting it under variable, which
// reportE2ESkips names.
func skipE2E(t *testing.T, variable, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	e2eSkips.Lock()
	e2eSkips.n[variable]++
	e2eSkips.Unlock()
	t.Skip(msg)
}

// reportE2ESkips prints one line when MCP end-to-end tests were skipped,
// naming the variables to set, so that plain "go test" output says so.
func reportE2ESkips() {
	e2eSkips.Lock()
	defer e2eSkips.Unlock()
	if len(e2eSkips.n) == 0 {
		return
	}
	var parts []string
	total := 0
	for v, n := range e2eSkips.n {
		parts = append(parts, v)
		total += n
	}
	sort.Strings(parts)
	fmt.Printf("hybridctx: %d MCP end-to-end tests skipped: set %s (see .ci/run)\n", total, strings.Join(parts, " and "))
}
