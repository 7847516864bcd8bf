package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx/internal/workload"
)

// benchHistoryLong is the part of bench's help about --history.
const benchHistoryLong = `
--history runs the history-budget benchmark instead: the workload's first
session replayed as --turns tool turns (500; from its start again when it is
shorter), one result per turn, each model call sending the whole history,
under six strategies: inline (every result inline), offload (results over
--threshold stored, a notice left), mask_every_turn (offload, and whenever the
tool content is over --history-budget, the oldest results masked just below
it), watermark (offload, and once over the budget the oldest results masked
down to --low-water in one step), keep_last_k and clear_at_trigger (the lossy
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
`

// historyFlags are bench's --history flags.
type historyFlags struct {
	on         bool
	turns      int
	budget     int64
	lowWater   int64
	keepRecent int
	tokenizer  string
}

func addHistoryFlags(cmd *cobra.Command, o *historyFlags) {
	f := cmd.Flags()
	f.BoolVar(&o.on, "history", false, "run the history-budget benchmark instead (see below)")
	f.IntVar(&o.turns, "turns", workload.DefaultHistoryTurns, "--history: tool turns replayed (> 0)")
	f.Int64Var(&o.budget, "history-budget", workload.DefaultHistoryBudget, "--history: tool content a history may hold, bytes or tokens (> 0)")
	f.Int64Var(&o.lowWater, "low-water", workload.DefaultHistoryLow, "--history: what a compaction step brings the tool content down to (> 0, <= budget)")
	f.IntVar(&o.keepRecent, "keep-recent", workload.DefaultKeepRecent, "--history: most recent results never masked (>= 0)")
	f.StringVar(&o.tokenizer, "tokenizer", "", "--history: weigh in tokens: "+tokenizerNames)
	cmd.Long += benchHistoryLong
}

// benchHistoryJSON is the output of bench --history.
type benchHistoryJSON struct {
	Workload  benchWorkload          `json:"workload"`
	Workspace benchWorkspace         `json:"workspace"`
	History   *workload.BudgetReport `json:"history_budget"`
}

// benchHistory runs bench --history.
func (a *app) benchHistory(cmd *cobra.Command, o benchFlags) error {
	h := o.hist
	if !h.on {
		for _, name := range historyFlagNames {
			if cmd.Flags().Changed(name) {
				return usagef("--%s applies to --history only", name)
			}
		}
	}
	switch {
	case h.turns <= 0:
		return usagef("--turns must be > 0")
	case h.budget <= 0 || h.lowWater <= 0:
		return usagef("--history-budget and --low-water must be > 0")
	case h.lowWater > h.budget:
		return usagef("--low-water must be at most --history-budget")
	case h.keepRecent < 0:
		return usagef("--keep-recent must be >= 0")
	case o.questions:
		return usagef("--questions and --history are separate benchmarks; run them one at a time")
	}
	tk, err := lookupTokenizer(h.tokenizer)
	if err != nil {
		return err
	}
	env, err := a.openBench(cmd, o)
	if err != nil {
		return err
	}
	defer env.close()
	ctx, src, wl, store, info := env.ctx, env.src, env.wl, env.store, env.info
	user, workflow := a.setting(cmd, "user", a.user, EnvUser), a.setting(cmd, "workflow", a.workflow, EnvWorkflow)
	if workflow == "" {
		workflow = "bench-" + randomID()[:12]
	}
	keep := h.keepRecent
	if keep == 0 {
		keep = -1 // HistoryPolicy: keep none
	}
	rep, err := workload.RunHistory(ctx, src, store, workload.HistoryOptions{Turns: h.turns, Threshold: o.threshold,
		Budget: h.budget, LowWater: h.lowWater, KeepRecent: keep, Tokenizer: tk, User: user, Workflow: workflow})
	if err != nil {
		return internal("bench --history", err)
	}
	if err := a.writeJSON(benchHistoryJSON{Workload: wl, Workspace: info.out, History: rep}); err != nil {
		return err
	}
	for _, s := range rep.Strategies {
		if s.Lossless && s.ReadBackExact != s.Masked {
			return &exitError{code: ExitInternal, msg: fmt.Sprintf("bench --history: %s: %d of %d masked results did not read back exactly",
				s.Name, s.Masked-s.ReadBackExact, s.Masked)}
		}
	}
	return nil
}

// historyFlagNames are the flags of bench --history alone.
var historyFlagNames = []string{"turns", "history-budget", "low-water", "keep-recent", "tokenizer"}

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
