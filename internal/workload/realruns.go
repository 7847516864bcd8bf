package workload

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
)

// The real-run benchmark (docs/history.md, "Real runs"): recorded agent
// runs replayed one by one under every strategy of the history benchmark,
// each run priced against its own offload-only replay.

// TrajectorySource yields trajectories in order; Next returns io.EOF after
// the last one. *TrajectoryReader is one.
type TrajectorySource interface {
	Next() (*Trajectory, error)
}

// Context sizes counted in RealStrategy.Over: the windows people meet.
var contextWindows = [...]int64{32_000, 128_000, 200_000}

// RealRunsReport is the outcome of RunTrajectories.
type RealRunsReport struct {
	// Trajectories, Outputs and OutputBytes count what was replayed.
	Trajectories int   `json:"trajectories"`
	Outputs      int   `json:"outputs"`
	OutputBytes  int64 `json:"output_bytes"`
	// Threshold, Budget, LowWater and KeepRecent are the options in force;
	// Tokenizer names the tokenizer, if any.
	Threshold  int64  `json:"threshold"`
	Budget     int64  `json:"budget"`
	LowWater   int64  `json:"low_water"`
	KeepRecent int    `json:"keep_recent"`
	Tokenizer  string `json:"tokenizer,omitempty"`
	// Strategies are the six strategies of the history benchmark, in its
	// order.
	Strategies []*RealStrategy `json:"strategies"`
}

// RealStrategy is what one strategy did over all the trajectories.
type RealStrategy struct {
	Name     string `json:"name"`
	Lossless bool   `json:"lossless"`
	// Cost is each run's cache-weighted input over its offload-only one:
	// over all runs, and over the Acted runs, those in which the strategy
	// changed the history (masked or cleared at least one result).
	Cost      Spread `json:"cost"`
	Acted     int    `json:"acted"`
	ActedCost Spread `json:"acted_cost"`
	// PeakToolBytes and PeakBytes spread each run's largest tool content
	// and largest history (what one model call sent).
	PeakToolBytes Spread `json:"peak_tool_bytes"`
	PeakBytes     Spread `json:"peak_bytes"`
	// Invalidations sums the prefix invalidations of all runs; Masked the
	// results masked (lossless) or cleared (lossy); ReadBackExact the
	// masked results that read back byte-exact through the read tool.
	Invalidations int `json:"invalidations"`
	Masked        int `json:"masked"`
	ReadBackExact int `json:"read_back_exact"`
	// Over counts the runs whose largest history went over 32k, 128k and
	// 200k tokens (the tokenizer's, else bytes/4), in that order.
	Over [len(contextWindows)]int `json:"runs_over_32k_128k_200k_tokens"`
}

// Spread is the median, 90th percentile (nearest rank) and maximum of one
// figure over runs; all zero when there is no run.
type Spread struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	Max float64 `json:"max"`
}

func spread(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	rank := func(p float64) float64 { return s[max(0, int(math.Ceil(p*float64(len(s))))-1)] }
	return Spread{P50: rank(0.5), P90: rank(0.9), Max: s[len(s)-1]}
}

// realAcc gathers one strategy's per-run figures.
type realAcc struct {
	out                         *RealStrategy
	cost, acted, peakTool, peak []float64
}

// RunTrajectories replays every trajectory of src under every strategy of
// the history benchmark, against store. Each trajectory is its own owner
// session (numbered; no name of the source is stored) under opts.User and
// opts.Workflow; opts.Turns does not apply.
func RunTrajectories(ctx context.Context, src TrajectorySource, store *workspace.Store, opts HistoryOptions) (*RealRunsReport, error) {
	opts = historyDefaults(opts)
	rep := &RealRunsReport{Threshold: opts.Threshold, Budget: opts.Budget, LowWater: opts.LowWater,
		KeepRecent: hybridctx.HistoryPolicy{KeepRecent: opts.KeepRecent}.Recent()}
	if opts.Tokenizer != nil {
		rep.Tokenizer = opts.Tokenizer.Name()
	}
	accs := make([]*realAcc, len(strategies))
	for i, name := range strategies {
		accs[i] = &realAcc{out: &RealStrategy{Name: name, Lossless: !lossy(name)}}
	}
	for {
		tr, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		rs, err := replayTrajectory(ctx, store, opts, "run-"+strconv.Itoa(rep.Trajectories+1), tr)
		if err != nil {
			return nil, fmt.Errorf("trajectory %d: %w", rep.Trajectories+1, err)
		}
		rep.Trajectories++
		rep.Outputs += len(tr.Turns)
		for _, t := range tr.Turns {
			rep.OutputBytes += int64(len(t.Output))
		}
		base := rs[slices.Index(strategies, StrategyOffload)].s.CacheWeighted
		for i, r := range rs {
			accs[i].add(r, base)
		}
	}
	if rep.Trajectories == 0 {
		return nil, ErrEmptySession
	}
	for _, a := range accs {
		a.out.Cost, a.out.ActedCost = spread(a.cost), spread(a.acted)
		a.out.PeakToolBytes, a.out.PeakBytes = spread(a.peakTool), spread(a.peak)
		rep.Strategies = append(rep.Strategies, a.out)
	}
	return rep, nil
}

// add counts one run of the strategy, base being the run's offload-only
// cache-weighted input.
func (a *realAcc) add(r *replay, base float64) {
	s, o := r.s, a.out
	rel := 1.0
	if base > 0 {
		rel = s.CacheWeighted / base
	}
	a.cost = append(a.cost, rel)
	if s.Masked > 0 {
		o.Acted++
		a.acted = append(a.acted, rel)
	}
	a.peakTool = append(a.peakTool, float64(s.PeakToolBytes))
	a.peak = append(a.peak, float64(s.PeakBytes))
	o.Invalidations += s.Invalidations
	o.Masked += s.Masked
	o.ReadBackExact += s.ReadBackExact
	for k, w := range contextWindows {
		if r.peakTok > w {
			o.Over[k]++
		}
	}
}

// replayTrajectory offloads one trajectory's outputs once for its owner
// session and replays it under every strategy.
func replayTrajectory(ctx context.Context, store *workspace.Store, opts HistoryOptions, session string, tr *Trajectory) ([]*replay, error) {
	bind, err := hybridctx.NewBinding(artifact.Owner{User: opts.User, Workflow: opts.Workflow, Session: session}, store)
	if err != nil {
		return nil, err
	}
	base := hybridctx.Policy{InlineThreshold: opts.Threshold, Tokenizer: opts.Tokenizer}
	off, err := hybridctx.NewOffloader(bind, base, nil)
	if err != nil {
		return nil, err
	}
	reh, err := hybridctx.NewRehydrator(bind, nil)
	if err != nil {
		return nil, err
	}
	turns := make([]turn, len(tr.Turns))
	for i, t := range tr.Turns {
		// The replay's own ids: a recorded run may repeat one.
		id := "call_" + strconv.Itoa(i)
		d, err := off.Offload(ctx, hybridctx.Call{Tool: t.Tool, ID: id}, []byte(t.Output))
		if err != nil {
			return nil, err
		}
		turns[i] = turn{tool: t.Tool, id: id, content: t.Output, offloaded: d.Text(), stored: d.Outcome() != hybridctx.Inline,
			span: span{pre: t.PreBytes, assistant: t.AssistantBytes, calls: t.Calls}}
	}
	c := &conversation{bind: bind, base: base, opts: opts, reh: reh, turns: turns, prompt: tr.PromptBytes,
		final: span{pre: tr.FinalPreBytes, calls: tr.FinalCalls}}
	return c.replayAll(ctx)
}
