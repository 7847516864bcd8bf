package benchcli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx/internal/cli"
	"github.com/hybridctx/hybridctx/internal/workload"
)

// benchHistoryLong is the part of bench's help about --history.
const benchHistoryLong = `
--history runs the history-budget benchmark instead: the workload's first
session replayed as --turns tool turns (500; from its start again when it is
shorter), one result per turn, each model call sending the whole history,
under six strategies: inline (every result inline), offload (results over
--threshold stored, a notice left), mask_every_turn (offload, and whenever the
tool content is over --history-budget, results masked just below it),
watermark (offload, and once over the budget results masked, newest first
below the recent ones, down to --low-water in one step), keep_last_k and clear_at_trigger (the lossy
rules of other frameworks, modelled on the offloaded history: all but the
--keep-recent last results cleared every turn; or, once over the budget,
cleared down to the low water mark). "history_budget" in the report gives per
strategy the peak history and tool content, the total input, the input priced
by a prompt-cache model (first sight 1.25, cached prefix 0.1, after an
invalidation 1.25 again), the prefix invalidations, the results masked or
cleared, the masked results read back byte-exact through read_artifact, and
one question per masked result answered through the read tools (calls and
bytes at p95). Cleared results can be neither read back nor asked about.
--tokenizer o200k_base or cl100k_base (or estimate: bytes/4) weighs the history in
tokens, and the budget is then in tokens.

--trajectories FILE[,FILE...] replays recorded agent runs instead of the
workload (gzipped or plain JSON Lines, one run per line; the format is in
docs/history.md, "Real runs"): each run its own session, every strategy
priced against the same run's offload-only replay. "real_runs" in the report
gives per strategy the median, 90th percentile and maximum of that relative
cost over all runs and over the runs the strategy acted on (masked or
cleared a result), of the peak tool content and of the peak history; the
invalidations, the results masked or cleared and those read back byte-exact;
and how many runs went over 32k, 128k and 200k tokens.

--markdown prints, instead of the JSON object, the tables README.md and
BENCHMARKS.md show: the summary, a blank line, then the detail (for
--trajectories, one configuration's rows under each header).
`

// historyFlags are bench's --history flags.
type historyFlags struct {
	on         bool
	turns      int
	budget     int64
	lowWater   int64
	keepRecent int
	tokenizer  string
	trajs      string
	markdown   bool
}

func addHistoryFlags(cmd *cobra.Command, o *historyFlags) {
	f := cmd.Flags()
	f.BoolVar(&o.on, "history", false, "run the history-budget benchmark instead (see below)")
	f.IntVar(&o.turns, "turns", workload.DefaultHistoryTurns, "--history: tool turns replayed (> 0)")
	f.Int64Var(&o.budget, "history-budget", workload.DefaultHistoryBudget, "--history: tool content a history may hold, bytes or tokens (> 0)")
	f.Int64Var(&o.lowWater, "low-water", workload.DefaultHistoryLow, "--history: what a compaction step brings the tool content down to (> 0, <= budget)")
	f.IntVar(&o.keepRecent, "keep-recent", workload.DefaultKeepRecent, "--history: most recent results never masked (>= 0)")
	f.StringVar(&o.tokenizer, "tokenizer", "", "--history: weigh in tokens: "+cli.TokenizerNames)
	f.StringVar(&o.trajs, "trajectories", "", "--history: replay these recorded runs (comma-separated files) instead of the workload")
	f.BoolVar(&o.markdown, "markdown", false, "--history: print the tables of README.md and BENCHMARKS.md instead of JSON")
	cmd.Long += benchHistoryLong
}

// benchHistoryJSON is the output of bench --history.
type benchHistoryJSON struct {
	Workload  benchWorkload            `json:"workload"`
	Workspace benchWorkspace           `json:"workspace"`
	History   *workload.BudgetReport   `json:"history_budget,omitempty"`
	RealRuns  *workload.RealRunsReport `json:"real_runs,omitempty"`
}

// benchHistory runs bench --history.
func (a *app) benchHistory(cmd *cobra.Command, o benchFlags) error {
	h := o.hist
	if !h.on {
		for _, name := range historyFlagNames {
			if cmd.Flags().Changed(name) {
				return cli.Usagef("--%s applies to --history only", name)
			}
		}
	}
	switch {
	case h.turns <= 0:
		return cli.Usagef("--turns must be > 0")
	case h.budget <= 0 || h.lowWater <= 0:
		return cli.Usagef("--history-budget and --low-water must be > 0")
	case h.lowWater > h.budget:
		return cli.Usagef("--low-water must be at most --history-budget")
	case h.keepRecent < 0:
		return cli.Usagef("--keep-recent must be >= 0")
	case o.questions:
		return cli.Usagef("--questions and --history are separate benchmarks; run them one at a time")
	case h.trajs != "" && (o.workload != "" || cmd.Flags().Changed("seed") || cmd.Flags().Changed("count") || cmd.Flags().Changed("turns")):
		return cli.Usagef("--trajectories replays recorded runs: --workload, --seed, --count and --turns do not apply")
	}
	tk, err := cli.LookupTokenizer(h.tokenizer)
	if err != nil {
		return err
	}
	user, workflow := a.UserWorkflow(cmd)
	if workflow == "" {
		workflow = "bench-" + cli.RandomID()[:12]
	}
	keep := h.keepRecent
	if keep == 0 {
		keep = -1 // HistoryPolicy: keep none
	}
	opts := workload.HistoryOptions{Turns: h.turns, Threshold: o.threshold,
		Budget: h.budget, LowWater: h.lowWater, KeepRecent: keep, Tokenizer: tk, User: user, Workflow: workflow}
	if h.trajs != "" {
		return a.benchTrajectories(cmd, h, opts)
	}
	env, err := a.openBench(cmd, o)
	if err != nil {
		return err
	}
	defer env.close()
	rep, err := workload.RunHistory(env.ctx, env.src, env.store, opts)
	if err != nil {
		return cli.Internal("bench --history", err)
	}
	if h.markdown {
		err = workload.WriteHistoryMarkdown(a.Stdout(), rep, &workload.MarkdownOptions{KeepRecent: h.keepRecent})
	} else {
		err = a.WriteJSON(benchHistoryJSON{Workload: env.wl, Workspace: env.info.out, History: rep})
	}
	if err != nil {
		return cli.Internal("writing the output", err)
	}
	for _, s := range rep.Strategies {
		if err := readBackCheck(s.Name, s.Lossless, s.Masked, s.ReadBackExact); err != nil {
			return err
		}
	}
	return nil
}

// readBackCheck fails bench --history when a lossless strategy masked a
// result that did not read back exactly.
func readBackCheck(name string, lossless bool, masked, exact int) error {
	if lossless && exact != masked {
		return cli.Fail(fmt.Sprintf("bench --history: %s: %d of %d masked results did not read back exactly",
			name, masked-exact, masked))
	}
	return nil
}

// historyFlagNames are the flags of bench --history alone.
var historyFlagNames = []string{"turns", "history-budget", "low-water", "keep-recent", "tokenizer", "trajectories", "markdown"}

// historyFlagsSet reports whether a --history flag was given (without
// --history, benchHistory refuses it).
func historyFlagsSet(f interface{ Changed(string) bool }) bool {
	for _, name := range historyFlagNames {
		if f.Changed(name) {
			return true
		}
	}
	return false
}
