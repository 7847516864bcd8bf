package ui

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/sink"
)

// MaxEventLine is the longest events-file line read; a longer one is a bad
// line (an event is a few hundred bytes).
const MaxEventLine = 64 << 10

// maxBadLines is how many bad lines are listed by number; all are counted.
const maxBadLines = 100

// Why a line of the events file was skipped (categorical: never its text).
const (
	badNotEvent = "not_an_event" // not JSON, or not the shape of docs/diagnostics.md
	badTooLong  = "too_long"     // over MaxEventLine
)

// BadLine is one skipped line of the events file.
type BadLine struct {
	Line   int64  `json:"line"`
	Reason string `json:"reason"`
}

// decision is one event of a run, flattened for the page.
type decision struct {
	Seq        uint64  `json:"seq"`
	Time       string  `json:"time"`
	Agent      string  `json:"agent"`
	Parent     *string `json:"parent"`
	Depth      int     `json:"depth"`
	Operation  string  `json:"operation"`
	Outcome    string  `json:"outcome"`
	Reason     string  `json:"reason"`
	Content    string  `json:"content"`
	View       string  `json:"view,omitempty"`
	Observed   *int64  `json:"observed_bytes"`
	Configured int64   `json:"configured_bytes"`
	Reference  string  `json:"reference,omitempty"`
	InBytes    int64   `json:"input_bytes"`
	OutBytes   *int64  `json:"output_bytes"`
	Kept       int64   `json:"kept_bytes"`
}

// run is every event of one run id, ordered by sequence.
type run struct {
	id        string
	first     time.Time
	last      time.Time
	decisions []decision
	summary   *sink.Summary
	// steps are the run's history_compaction events, in file order.
	steps []step
	// recorded is the history report of the run's run_summary line (the
	// proxy writes one at its end): the run's compaction counts when no
	// history_compaction event was written (files of older versions).
	recorded *sink.HistoryReport
}

// step is one compaction step of a run, flattened for the page: from its
// history_compaction event, or, in a file without them, approximated from
// the history_budget decisions of one agent in a row (Before and After
// unknown, null).
type step struct {
	Seq      uint64  `json:"seq"`
	FirstSeq uint64  `json:"first_seq,omitempty"`
	Time     string  `json:"time"`
	Agent    string  `json:"agent"`
	Parent   *string `json:"parent"`
	Depth    int     `json:"depth"`
	// At is the index, in the economy chart's series, of the last decision
	// at or before the step (-1: none).
	At            int                    `json:"at"`
	Stepped       bool                   `json:"stepped"`
	ResultsMasked int64                  `json:"results_masked"`
	InputsMasked  int64                  `json:"inputs_masked"`
	Failed        int64                  `json:"failed"`
	Before        *hybridctx.HistorySize `json:"before"`
	After         *hybridctx.HistorySize `json:"after"`
	Invalidates   bool                   `json:"invalidates_cached_prefix"`
	OverBudget    bool                   `json:"over_budget"`
	Shortfall     string                 `json:"shortfall,omitempty"`
	// MaskedBytes and Kept are the masked results' size and the bytes
	// their decisions kept out of the context (approximated steps only).
	MaskedBytes int64 `json:"masked_bytes,omitempty"`
	Kept        int64 `json:"bytes_kept_out_of_context,omitempty"`
}

// eventsView is what one read of the events file found.
type eventsView struct {
	Path     string
	Present  bool
	Lines    int64
	Bad      int64
	BadLines []BadLine
	runs     map[string]*run
	order    []string // run ids, most recent first
	size     int64
	modTime  time.Time
}

// runSummaryLine is the part of a run_summary line the page uses.
type runSummaryLine struct {
	Type    string              `json:"type"`
	RunID   string              `json:"run_id"`
	History *sink.HistoryReport `json:"history"`
}

// loadEvents reads the events file at path. A missing file is an empty
// view (Present false), not an error; bad lines are counted and skipped.
func loadEvents(ctx context.Context, path string) (*eventsView, error) {
	v := &eventsView{Path: path, runs: map[string]*run{}}
	if path == "" {
		return v, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return v, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	v.Present, v.size, v.modTime = true, st.Size(), st.ModTime()
	if err := v.read(ctx, f); err != nil {
		return nil, err
	}
	v.finish()
	return v, nil
}

// read parses r line by line.
func (v *eventsView) read(ctx context.Context, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		if v.Lines%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, tooLong, err := readLine(br)
		if err == io.EOF && len(line) == 0 && !tooLong {
			return nil
		}
		if err != nil && err != io.EOF {
			return err
		}
		v.Lines++
		switch {
		case tooLong:
			v.bad(badTooLong)
		case len(bytes.TrimSpace(line)) == 0:
			v.Lines-- // a blank line is no line of the file's content
		default:
			v.add(line)
		}
		if err == io.EOF {
			return nil
		}
	}
}

// readLine returns the next line without its newline; a line over
// MaxEventLine is consumed and reported as tooLong.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxEventLine+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) > MaxEventLine {
			tooLong, line = true, nil
		}
		return line, tooLong, err
	}
}

func (v *eventsView) bad(reason string) {
	v.Bad++
	if len(v.BadLines) < maxBadLines {
		v.BadLines = append(v.BadLines, BadLine{Line: v.Lines, Reason: reason})
	}
}

// add parses one line: a progress event, a run summary, or a bad line.
func (v *eventsView) add(line []byte) {
	e, err := hybridctx.ParseEvent(line)
	if err != nil {
		var s runSummaryLine
		if json.Unmarshal(line, &s) == nil && s.Type == "run_summary" && s.RunID != "" {
			r := v.run(s.RunID)
			if s.History != nil {
				h := *s.History
				r.recorded = &h
			}
			return
		}
		v.bad(badNotEvent)
		return
	}
	r := v.run(e.RunID)
	if r.first.IsZero() || e.Time.Before(r.first) {
		r.first = e.Time
	}
	if e.Time.After(r.last) {
		r.last = e.Time
	}
	_ = r.summary.Emit(context.Background(), e)
	if e.Compaction != nil {
		r.steps = append(r.steps, flattenStep(e))
		return
	}
	r.decisions = append(r.decisions, flatten(e))
}

func (v *eventsView) run(id string) *run {
	r := v.runs[id]
	if r == nil {
		r = &run{id: id, summary: sink.NewSummary()}
		v.runs[id] = r
	}
	return r
}

// finish orders each run's decisions by sequence and the runs by their
// last event, most recent first.
func (v *eventsView) finish() {
	for id, r := range v.runs {
		slices.SortStableFunc(r.decisions, func(a, b decision) int {
			switch {
			case a.Seq < b.Seq:
				return -1
			case a.Seq > b.Seq:
				return 1
			}
			return 0
		})
		slices.SortStableFunc(r.steps, func(a, b step) int { return cmp.Compare(a.Seq, b.Seq) })
		v.order = append(v.order, id)
	}
	slices.SortFunc(v.order, func(a, b string) int {
		if c := v.runs[b].last.Compare(v.runs[a].last); c != 0 {
			return c
		}
		if a < b {
			return -1
		}
		return 1
	})
}

// flatten turns an event into the page's row.
func flatten(e *hybridctx.Event) decision {
	d := e.Diagnostics
	in, out, hasOut := d.Attribution()
	row := decision{Seq: e.Sequence, Time: e.Time.UTC().Format(hybridctx.TimeLayout), Agent: e.AgentID,
		Parent: e.ParentAgentID, Depth: e.Depth, Operation: d.Operation().String(), Outcome: d.Outcome().String(),
		Reason: d.Reason().String(), Content: d.Content().String(), Configured: d.ConfiguredBytes(), InBytes: in,
		Kept: sink.KeptOutOfContext(d)}
	if d.Operation() == hybridctx.OpRehydration {
		row.View = d.View().String()
	}
	if n, ok := d.ObservedBytes(); ok {
		row.Observed = &n
	}
	if hasOut {
		row.OutBytes = &out
	}
	if ref := d.Reference(); !ref.IsZero() {
		row.Reference = ref.String()
	}
	return row
}

// flattenStep turns a history_compaction event into the page's step.
func flattenStep(e *hybridctx.Event) step {
	c := e.Compaction
	before, after := c.Before(), c.After()
	st := step{Seq: e.Sequence, Time: e.Time.UTC().Format(hybridctx.TimeLayout), Agent: e.AgentID,
		Parent: e.ParentAgentID, Depth: e.Depth, At: -1, Stepped: c.Stepped(), ResultsMasked: c.ResultsMasked(),
		InputsMasked: c.InputsMasked(), Failed: c.Failed(), Before: &before, After: &after,
		Invalidates: c.InvalidatesCachedPrefix(), OverBudget: c.OverBudget()}
	if c.Shortfall() != 0 {
		st.Shortfall = c.Shortfall().String()
	}
	return st
}

// stale reports whether the file changed (size, time, presence) since it
// was read.
func (v *eventsView) stale() bool {
	if v.Path == "" {
		return false
	}
	st, err := os.Stat(v.Path)
	if err != nil {
		return v.Present
	}
	return !v.Present || st.Size() != v.size || !st.ModTime().Equal(v.modTime)
}
