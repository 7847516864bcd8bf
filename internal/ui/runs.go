package ui

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/sink"
)

// runsJSON answers GET /api/runs.
type runsJSON struct {
	EventsFile string     `json:"events_file"`
	Present    bool       `json:"present"`
	Lines      int64      `json:"lines"`
	BadLines   int64      `json:"bad_lines"`
	Bad        []BadLine  `json:"bad"`
	Runs       []runBrief `json:"runs"`
}

// runBrief is one run in the list.
type runBrief struct {
	RunID     string `json:"run_id"`
	First     string `json:"first_time"`
	Last      string `json:"last_time"`
	Decisions int    `json:"decisions"`
	Agents    int    `json:"agents"`
	Kept      int64  `json:"bytes_kept_out_of_context"`
	Rehyd     int64  `json:"bytes_rehydrated"`
}

func (v *eventsView) list() runsJSON {
	out := runsJSON{EventsFile: v.Path, Present: v.Present, Lines: v.Lines, BadLines: v.Bad,
		Bad: v.BadLines, Runs: []runBrief{}}
	if out.Bad == nil {
		out.Bad = []BadLine{}
	}
	for _, id := range v.order {
		r := v.runs[id]
		rep := r.summary.Report()
		b := runBrief{RunID: id, Decisions: len(r.decisions), Agents: rep.Agents,
			Kept: rep.BytesKeptOutOfContext, Rehyd: rep.BytesRehydrated}
		if !r.first.IsZero() {
			b.First, b.Last = r.first.UTC().Format(hybridctx.TimeLayout), r.last.UTC().Format(hybridctx.TimeLayout)
		}
		out.Runs = append(out.Runs, b)
	}
	return out
}

// runJSON answers GET /api/runs/{id}: the summary, the agents, the
// compaction steps and the economy chart's points; the decisions are paged
// apart.
type runJSON struct {
	RunID       string             `json:"run_id"`
	First       string             `json:"first_time"`
	Last        string             `json:"last_time"`
	Summary     sink.SummaryReport `json:"summary"`
	SummaryText []string           `json:"summary_text"`
	Agents      []*agentNode       `json:"agents"`
	// Steps are the run's compaction steps; StepsFrom says where they come
	// from: "history_compaction" (the steps' events), "history_budget"
	// (approximated from the decisions of a file without those events), or
	// "" when the run has none.
	Steps     []step  `json:"compaction_steps"`
	StepsFrom string  `json:"compaction_steps_from"`
	Economy   economy `json:"economy"`
}

// agentNode is one agent of the run's tree, with its sub-agents.
type agentNode struct {
	Agent     string       `json:"agent"`
	Depth     int          `json:"depth"`
	Decisions int          `json:"decisions"`
	Kept      int64        `json:"bytes_kept_out_of_context"`
	Children  []*agentNode `json:"children"`
	parent    *string
}

// economy is the chart of one run: after each decision, the bytes kept out
// of the context and the bytes read back so far.
type economy struct {
	Sentence string   `json:"sentence"`
	Seq      []uint64 `json:"seq"`
	Kept     []int64  `json:"kept"`
	Read     []int64  `json:"read"`
}

func (r *run) detail() runJSON {
	rep := r.summary.Report()
	if r.recorded != nil && len(r.steps) == 0 {
		rep.History = *r.recorded
	}
	out := runJSON{RunID: r.id, Summary: rep, SummaryText: SummaryText(rep), Agents: r.tree(), Steps: r.compactionSteps()}
	if len(out.Steps) > 0 {
		out.StepsFrom = "history_budget"
		if len(r.steps) > 0 {
			out.StepsFrom = "history_compaction"
		}
	}
	if !r.first.IsZero() {
		out.First, out.Last = r.first.UTC().Format(hybridctx.TimeLayout), r.last.UTC().Format(hybridctx.TimeLayout)
	}
	e := economy{Seq: make([]uint64, 0, len(r.decisions)), Kept: make([]int64, 0, len(r.decisions)),
		Read: make([]int64, 0, len(r.decisions))}
	var kept, read int64
	for _, d := range r.decisions {
		kept += d.Kept
		if d.Outcome == hybridctx.Resolved.String() && d.OutBytes != nil {
			read += *d.OutBytes
		}
		e.Seq, e.Kept, e.Read = append(e.Seq, d.Seq), append(e.Kept, kept), append(e.Read, read)
	}
	e.Sentence = fmt.Sprintf("kept %s out; the model read %s back", humanBytes(rep.BytesKeptOutOfContext), humanBytes(rep.BytesRehydrated))
	out.Economy = e
	return out
}

// tree builds the agents of the run, each under its parent.
func (r *run) tree() []*agentNode {
	byKey := map[string]*agentNode{}
	var order []*agentNode
	for _, d := range r.decisions {
		k := agentKey(d.Agent, d.Parent, d.Depth)
		n := byKey[k]
		if n == nil {
			n = &agentNode{Agent: d.Agent, Depth: d.Depth, parent: d.Parent, Children: []*agentNode{}}
			byKey[k] = n
			order = append(order, n)
		}
		n.Decisions++
		n.Kept += d.Kept
	}
	roots := []*agentNode{}
	for _, n := range order {
		var p *agentNode
		if n.parent != nil && n.Depth > 0 {
			for _, c := range order {
				if c.Agent == *n.parent && c.Depth == n.Depth-1 {
					p = c
					break
				}
			}
		}
		if p == nil {
			roots = append(roots, n)
		} else {
			p.Children = append(p.Children, n)
		}
	}
	return roots
}

func agentKey(agent string, parent *string, depth int) string {
	p := "\x00"
	if parent != nil {
		p = *parent
	}
	return fmt.Sprintf("%d\x00%s\x00%s", depth, p, agent)
}

// compactionSteps returns the run's steps, each placed on the economy
// chart: its history_compaction events, or, when the file has none (older
// versions wrote none), the history_budget decisions of each agent that
// follow one another among that agent's decisions, one approximated step
// per run of them. Each approximated step masked a result, so it
// invalidated a provider's cached prefix from its first masked message on
// (docs/history.md).
func (r *run) compactionSteps() []step {
	steps := []step{}
	if len(r.steps) > 0 {
		steps = append(steps, r.steps...)
	} else {
		open := map[string]int{} // agent key → index of its open step, or -1
		for _, d := range r.decisions {
			k := agentKey(d.Agent, d.Parent, d.Depth)
			if d.Reason != hybridctx.HistoryBudget.String() {
				open[k] = -1
				continue
			}
			i, ok := open[k]
			if !ok || i < 0 {
				steps = append(steps, step{FirstSeq: d.Seq, Time: d.Time, Agent: d.Agent, Parent: d.Parent,
					Depth: d.Depth, Stepped: true, Invalidates: true})
				i = len(steps) - 1
				open[k] = i
			}
			s := &steps[i]
			s.Seq = d.Seq
			s.ResultsMasked++
			s.MaskedBytes += d.InBytes
			s.Kept += d.Kept
		}
	}
	for i := range steps {
		// the decisions are ordered by sequence: the last one at or
		// before the step is where the chart marks it
		steps[i].At = sort.Search(len(r.decisions), func(j int) bool { return r.decisions[j].Seq > steps[i].Seq }) - 1
	}
	return steps
}

// SummaryText renders a run summary as the command line's summary lines
// (sink.SummaryReport.WriteText, their one definition), one string each.
func SummaryText(rep sink.SummaryReport) []string {
	var b strings.Builder
	_ = rep.WriteText(&b)
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// humanBytes renders n as "977 bytes", "2.1 KB", "2.1 MB" (powers of 1000).
func humanBytes(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d bytes", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}
