package workload

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// The tables of README.md and BENCHMARKS.md that show the history-budget
// benchmark, printed from its reports (hybridctx-bench --history
// --markdown), so that the pages show what a run printed and nothing else.
// The headers are the pages' contract: a test of this package fails when a
// page's table no longer has them.

// Headers of the generated tables, in the order WriteHistoryMarkdown and
// WriteRealRunsMarkdown print them.
var (
	// SummaryHeader is README.md's synthetic-session table.
	SummaryHeader = []string{"strategy", "peak tool content", "cache-weighted input", "invalidations",
		"masked results read back exact", "question about one: calls, bytes (p95)"}
	// DetailHeader is BENCHMARKS.md's synthetic-session table.
	DetailHeader = []string{"strategy", "peak history", "peak tool content", "input, all calls",
		"cache-weighted (share of offload)", "invalidations", "bytes re-sent after one", "masked / cleared",
		"read back exact", "questions: count, calls p95, bytes p95"}
	// RealSummaryHeader is README.md's recorded-runs table: one row per
	// threshold and budget.
	RealSummaryHeader = []string{"threshold, budget", "runs acted on", "watermark: cost p50 / p90",
		"clear at a trigger (lossy): cost p50 / p90", "masks read back exact"}
	// RealDetailHeader is BENCHMARKS.md's recorded-runs table.
	RealDetailHeader = []string{"threshold, budget", "strategy", "acting runs", "cost p50 / p90, all runs",
		"cost p50 / p90, acting runs", "peak tool content p50 / p90 / max", "invalidations",
		"masked or cleared", "read back exact", "runs over 32k / 128k / 200k tokens"}
)

// MarkdownOptions say what a report does not: the options it ran under.
type MarkdownOptions struct {
	// KeepRecent is the --keep-recent of the run, for keep_last_k's label
	// (0 means DefaultKeepRecent).
	KeepRecent int
}

// summaryNames label the strategies in README.md's table; "%d" is the
// number kept.
var summaryNames = map[string]string{
	StrategyInline:        "inline",
	StrategyOffload:       "offload only",
	StrategyMaskEveryTurn: "offload + mask at every turn",
	StrategyWatermark:     "offload + watermarks",
	StrategyKeepLastK:     "keep the last %d (lossy)",
	StrategyClearTrigger:  "clear at a trigger (lossy)",
}

// WriteHistoryMarkdown writes the two tables of a synthetic-session run:
// README.md's summary (SummaryHeader), a blank line, then BENCHMARKS.md's
// detail (DetailHeader).
func WriteHistoryMarkdown(w io.Writer, rep *BudgetReport, opts *MarkdownOptions) error {
	keep := DefaultKeepRecent
	if opts != nil && opts.KeepRecent > 0 {
		keep = opts.KeepRecent
	}
	var off float64
	for _, s := range rep.Strategies {
		if s.Name == StrategyOffload {
			off = s.CacheWeighted
		}
	}
	var b strings.Builder
	writeRow(&b, SummaryHeader)
	writeRule(&b, len(SummaryHeader))
	for _, s := range rep.Strategies {
		name := s.Name
		if label, ok := summaryNames[s.Name]; ok {
			name = label
			if strings.Contains(label, "%d") {
				name = fmt.Sprintf(label, keep)
			}
		}
		share := shareOf(s.CacheWeighted, off)
		if s.Name == StrategyWatermark {
			share = "**" + share + "**"
		}
		readBack, question := "—", "—"
		switch {
		case !s.Lossless:
			readBack, question = "none: cleared", "none answerable"
		case s.Masked > 0:
			readBack = group(int64(s.ReadBackExact)) + " of " + group(int64(s.Masked))
			if s.Questions.Count > 0 {
				question = group(s.Questions.CallsP95) + ", " + group(s.Questions.BytesP95)
			}
		}
		writeRow(&b, []string{name, humanBytes(s.PeakToolBytes), share, group(int64(s.Invalidations)), readBack, question})
	}
	b.WriteByte('\n')
	writeRow(&b, DetailHeader)
	writeRule(&b, len(DetailHeader))
	for _, s := range rep.Strategies {
		name, masked, readBack, questions := s.Name, group(int64(s.Masked)), "—", "—"
		switch {
		case !s.Lossless:
			name += " (lossy)"
			masked += " cleared"
			questions = "none answerable"
		case s.Masked > 0:
			readBack = group(int64(s.ReadBackExact)) + " of " + group(int64(s.Masked))
			if s.Questions.Count > 0 {
				questions = group(int64(s.Questions.Count)) + ", " + group(s.Questions.CallsP95) + ", " + group(s.Questions.BytesP95)
			}
		}
		writeRow(&b, []string{name, group(s.PeakBytes), group(s.PeakToolBytes), group(s.InputBytes),
			group(int64(math.Round(s.CacheWeighted))) + " (" + shareOf(s.CacheWeighted, off) + ")",
			group(int64(s.Invalidations)), group(s.InvalidatedBytes), masked, readBack, questions})
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRealRunsMarkdown writes the two tables of a recorded-runs replay:
// README.md's summary (RealSummaryHeader, one row), a blank line, then
// BENCHMARKS.md's detail (RealDetailHeader). Both start with their header,
// so that tables of several runs are joined by keeping the rows.
func WriteRealRunsMarkdown(w io.Writer, rep *RealRunsReport) error {
	config := sizeLabel(rep.Threshold, "") + ", " + sizeLabel(rep.Budget, rep.Tokenizer)
	by := map[string]*RealStrategy{}
	for _, s := range rep.Strategies {
		by[s.Name] = s
	}
	var b strings.Builder
	writeRow(&b, RealSummaryHeader)
	writeRule(&b, len(RealSummaryHeader))
	if wm, cl := by[StrategyWatermark], by[StrategyClearTrigger]; wm != nil && cl != nil {
		writeRow(&b, []string{config, group(int64(wm.Acted)), pair(wm.ActedCost), pair(cl.ActedCost),
			group(int64(wm.ReadBackExact)) + " of " + group(int64(wm.Masked))})
	}
	b.WriteByte('\n')
	writeRow(&b, RealDetailHeader)
	writeRule(&b, len(RealDetailHeader))
	for _, s := range rep.Strategies {
		name, readBack := s.Name, "0"
		switch {
		case !s.Lossless:
			name += " (lossy)"
			readBack = "—"
		case s.Masked > 0:
			readBack = group(int64(s.ReadBackExact)) + " of " + group(int64(s.Masked))
		}
		over := make([]string, len(s.Over))
		for i, n := range s.Over {
			over[i] = group(int64(n))
		}
		peak := group(int64(s.PeakToolBytes.P50)) + " / " + group(int64(s.PeakToolBytes.P90)) + " / " + group(int64(s.PeakToolBytes.Max))
		writeRow(&b, []string{config, name, group(int64(s.Acted)), pair(s.Cost), pair(s.ActedCost), peak,
			group(int64(s.Invalidations)), group(int64(s.Masked)), readBack, strings.Join(over, " / ")})
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeRow(b *strings.Builder, cells []string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func writeRule(b *strings.Builder, n int) {
	b.WriteString("|" + strings.Repeat("---|", n) + "\n")
}

// pair is a cost's p50 and p90, three decimals.
func pair(s Spread) string {
	return strconv.FormatFloat(s.P50, 'f', 3, 64) + " / " + strconv.FormatFloat(s.P90, 'f', 3, 64)
}

// shareOf is v as a whole percentage of base, "—" without a base.
func shareOf(v, base float64) string {
	if base <= 0 {
		return "—"
	}
	return group(int64(math.Round(100*v/base))) + "%"
}

// humanBytes writes n in MB with one decimal from 1 MB, else in whole KB,
// else in bytes (decimal units, as the pages' prose).
func humanBytes(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB"
	case n >= 1_000:
		return group(int64(math.Round(float64(n)/1e3))) + " KB"
	}
	return group(n) + " bytes"
}

// sizeLabel writes a threshold or budget: n tokens with a tokenizer, else
// whole KiB when n is a multiple of 1024, else bytes.
func sizeLabel(n int64, tokenizer string) string {
	switch {
	case tokenizer != "":
		return group(n) + " tokens"
	case n > 0 && n%1024 == 0:
		return group(n/1024) + " KiB"
	}
	return group(n) + " bytes"
}

// group writes n with a comma between groups of three digits.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
