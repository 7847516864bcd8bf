package workload_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/internal/workload"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// tableRows splits a Markdown table into its rows' cells, checking the
// header and the rule.
func tableRows(t *testing.T, table string, header []string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) < 2 || lines[0] != "| "+strings.Join(header, " | ")+" |" || lines[1] != "|"+strings.Repeat("---|", len(header)) {
		t.Fatalf("not a table under %q:\n%s", header, table)
	}
	var rows [][]string
	for _, l := range lines[2:] {
		if !strings.HasPrefix(l, "| ") || !strings.HasSuffix(l, " |") {
			t.Fatalf("not a row: %q", l)
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "| "), " |"), " | ")
		if len(cells) != len(header) {
			t.Fatalf("row of %d cells, want %d: %q", len(cells), len(header), l)
		}
		rows = append(rows, cells)
	}
	return rows
}

// TestWriteHistoryMarkdownRun runs the benchmark on a small session and
// checks the shape of both tables: every strategy once, in report order,
// each row as wide as its header, the lossy ones saying what they lost.
func TestWriteHistoryMarkdownRun(t *testing.T) {
	g, err := workload.Generate(&workload.GenerateOptions{Seed: 2, Count: 40})
	if err != nil {
		t.Fatal(err)
	}
	mem := memstore.New()
	rep, err := workload.RunHistory(context.Background(), g, workspace.New(mem, mem),
		workload.HistoryOptions{Turns: 30, Budget: 1000, LowWater: 500, User: "u", Workflow: "w"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := workload.WriteHistoryMarkdown(&b, rep, nil); err != nil {
		t.Fatal(err)
	}
	summary, detail, ok := strings.Cut(b.String(), "\n\n")
	if !ok {
		t.Fatalf("not two tables:\n%s", b.String())
	}
	sum, det := tableRows(t, summary, workload.SummaryHeader), tableRows(t, detail, workload.DetailHeader)
	labels := []string{"inline", "offload only", "offload + mask at every turn", "offload + watermarks", "keep the last 3 (lossy)", "clear at a trigger (lossy)"}
	if len(sum) != len(labels) || len(det) != len(rep.Strategies) {
		t.Fatalf("%d and %d rows for %d strategies", len(sum), len(det), len(rep.Strategies))
	}
	for i, s := range rep.Strategies {
		if sum[i][0] != labels[i] || !strings.HasPrefix(det[i][0], s.Name) {
			t.Errorf("row %d: %q, %q for %s", i, sum[i][0], det[i][0], s.Name)
		}
		if !s.Lossless && (sum[i][4] != "none: cleared" || !strings.HasSuffix(det[i][7], " cleared")) {
			t.Errorf("lossy %s: %q", s.Name, sum[i])
		}
	}
	if sum[1][2] != "100%" || sum[3][2][:2] != "**" || !strings.HasSuffix(det[1][4], "(100%)") {
		t.Errorf("shares: %q, %q, %q", sum[1][2], sum[3][2], det[1][4])
	}
}

// TestWriteHistoryMarkdownFigures pins the formatting of each figure on a
// report written by hand.
func TestWriteHistoryMarkdownFigures(t *testing.T) {
	q := workload.BudgetQuestions{Count: 1429, CallsP95: 1, BytesP95: 160, Exact: 1429}
	rep := &workload.BudgetReport{Turns: 500, Strategies: []*workload.BudgetStrategy{
		{Name: workload.StrategyInline, Lossless: true, PeakBytes: 27967545, PeakToolBytes: 27926749, InputBytes: 6366969794, CacheWeighted: 668859656.15},
		{Name: workload.StrategyOffload, Lossless: true, PeakBytes: 463038, PeakToolBytes: 422242, InputBytes: 111057197, CacheWeighted: 11638213.4},
		{Name: workload.StrategyWatermark, Lossless: true, PeakToolBytes: 80082, CacheWeighted: 4525647, Invalidations: 1302,
			InvalidatedBytes: 699852, Masked: 1479, ReadBackExact: 1479, Questions: q},
		{Name: workload.StrategyKeepLastK, PeakToolBytes: 999, CacheWeighted: 3030901, Masked: 497},
	}}
	var b bytes.Buffer
	if err := workload.WriteHistoryMarkdown(&b, rep, &workload.MarkdownOptions{KeepRecent: 5}); err != nil {
		t.Fatal(err)
	}
	summary, detail, _ := strings.Cut(b.String(), "\n\n")
	for _, want := range []string{
		"| inline | 27.9 MB | 5,747% | 0 | — | — |",
		"| offload only | 422 KB | 100% | 0 | — | — |",
		"| offload + watermarks | 80 KB | **39%** | 1,302 | 1,479 of 1,479 | 1, 160 |",
		"| keep the last 5 (lossy) | 999 bytes | 26% | 0 | none: cleared | none answerable |",
	} {
		if !strings.Contains(summary+"\n", want+"\n") {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	for _, want := range []string{
		"| inline | 27,967,545 | 27,926,749 | 6,366,969,794 | 668,859,656 (5,747%) | 0 | 0 | 0 | — | — |",
		"| watermark | 0 | 80,082 | 0 | 4,525,647 (39%) | 1,302 | 699,852 | 1,479 | 1,479 of 1,479 | 1,429, 1, 160 |",
		"| keep_last_k (lossy) | 0 | 999 | 0 | 3,030,901 (26%) | 0 | 0 | 497 cleared | — | none answerable |",
	} {
		if !strings.Contains(detail, want+"\n") {
			t.Errorf("detail lacks %q:\n%s", want, detail)
		}
	}
	// Without an offload strategy there is no share to give.
	b.Reset()
	if err := workload.WriteHistoryMarkdown(&b, &workload.BudgetReport{Strategies: rep.Strategies[:1]}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| inline | 27.9 MB | — |") {
		t.Errorf("share without offload:\n%s", b.String())
	}
}

// TestWriteRealRunsMarkdown pins the recorded-runs tables on a report
// written by hand.
func TestWriteRealRunsMarkdown(t *testing.T) {
	cost := workload.Spread{P50: 1, P90: 1.0684}
	rep := &workload.RealRunsReport{Threshold: 16384, Budget: 32768, Strategies: []*workload.RealStrategy{
		{Name: workload.StrategyOffload, Lossless: true, Cost: cost, PeakToolBytes: workload.Spread{P50: 24555, P90: 58866, Max: 165177}, Over: [3]int{49, 0, 0}},
		{Name: workload.StrategyWatermark, Lossless: true, Acted: 274, Cost: cost, ActedCost: workload.Spread{P50: 1.005, P90: 1.138},
			PeakToolBytes: workload.Spread{P50: 24203, P90: 32458, Max: 34035}, Invalidations: 426, Masked: 5116, ReadBackExact: 5116, Over: [3]int{13, 0, 0}},
		{Name: workload.StrategyClearTrigger, Acted: 274, ActedCost: workload.Spread{P50: 1.039, P90: 1.172}, Masked: 6847},
	}}
	var b bytes.Buffer
	if err := workload.WriteRealRunsMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	summary, detail, _ := strings.Cut(b.String(), "\n\n")
	if rows := tableRows(t, summary, workload.RealSummaryHeader); len(rows) != 1 ||
		strings.Join(rows[0], " | ") != "16 KiB, 32 KiB | 274 | 1.005 / 1.138 | 1.039 / 1.172 | 5,116 of 5,116" {
		t.Errorf("summary %q", rows)
	}
	rows := tableRows(t, detail, workload.RealDetailHeader)
	want := []string{
		"16 KiB, 32 KiB | offload | 0 | 1.000 / 1.068 | 0.000 / 0.000 | 24,555 / 58,866 / 165,177 | 0 | 0 | 0 | 49 / 0 / 0",
		"16 KiB, 32 KiB | watermark | 274 | 1.000 / 1.068 | 1.005 / 1.138 | 24,203 / 32,458 / 34,035 | 426 | 5,116 | 5,116 of 5,116 | 13 / 0 / 0",
		"16 KiB, 32 KiB | clear_at_trigger (lossy) | 274 | 0.000 / 0.000 | 1.039 / 1.172 | 0 / 0 / 0 | 0 | 6,847 | — | 0 / 0 / 0",
	}
	for i, r := range rows {
		if got := strings.Join(r, " | "); i >= len(want) || got != want[i] {
			t.Errorf("row %d: %q", i, got)
		}
	}
	// A token budget is labelled in tokens; a budget of odd bytes in bytes.
	b.Reset()
	rep.Tokenizer, rep.Threshold = "o200k_base", 1000
	if err := workload.WriteRealRunsMarkdown(&b, rep); err != nil || !strings.Contains(b.String(), "| 1,000 bytes, 32,768 tokens | 274 |") {
		t.Errorf("%v\n%s", err, b.String())
	}
}
