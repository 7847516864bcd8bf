package workload_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/internal/workload"
)

// docTable returns the rows of the first table of page (a file at the
// repository's root) whose header row is header, or fails naming the page.
func docTable(t *testing.T, page string, header []string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", page))
	if err != nil {
		t.Fatal(err)
	}
	head := "| " + strings.Join(header, " | ") + " |"
	_, rest, ok := strings.Cut(string(b), "\n"+head+"\n")
	if !ok {
		t.Fatalf("%s has no table headed %q: print it again with hybridctx-bench --history --markdown", page, head)
	}
	var table strings.Builder
	table.WriteString(head + "\n")
	for _, l := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(l, "|") {
			break
		}
		table.WriteString(l + "\n")
	}
	return tableRows(t, table.String(), header)
}

// TestDocsHistoryTables fails when a history table of README.md or
// BENCHMARKS.md no longer has the columns its generator prints
// (workload.WriteHistoryMarkdown, WriteRealRunsMarkdown), or README's
// synthetic session no longer lists the generator's strategies in its
// order.
func TestDocsHistoryTables(t *testing.T) {
	rows := docTable(t, "README.md", workload.SummaryHeader)
	labels := []string{"inline", "offload only", "offload + mask at every turn", "offload + watermarks", "keep the last 3 (lossy)", "clear at a trigger (lossy)"}
	if len(rows) != len(labels) {
		t.Fatalf("README.md's synthetic session has %d rows, want %d", len(rows), len(labels))
	}
	for i, r := range rows {
		if r[0] != labels[i] {
			t.Errorf("README.md's synthetic session: row %d is %q, want %q", i, r[0], labels[i])
		}
	}
	if len(docTable(t, "README.md", workload.RealSummaryHeader)) == 0 {
		t.Error("README.md's recorded runs: no row")
	}
	if len(docTable(t, "BENCHMARKS.md", workload.DetailHeader)) != 6 {
		t.Error("BENCHMARKS.md's synthetic session: want the six strategies")
	}
	if len(docTable(t, "BENCHMARKS.md", workload.RealDetailHeader)) == 0 {
		t.Error("BENCHMARKS.md's recorded runs: no row")
	}
}
