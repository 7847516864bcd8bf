package hybridctx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// EventType names a progress event.
type EventType string

// The decision event types, one per operation (HistoryCompaction, the
// third type, reports a compaction step).
const (
	OffloadDecision     EventType = "offload_decision"
	RehydrationDecision EventType = "rehydration_decision"
)

// TimeLayout is the event time format: UTC with exactly nine fractional
// digits.
const TimeLayout = "2006-01-02T15:04:05.000000000Z"

// Event reports one completed decision, or one compaction step. Diagnostics
// is the identical instance attached to the decision's outcome; nil for a
// HistoryCompaction event, whose Compaction is the identical instance
// attached to the Compaction (Compaction.Step).
type Event struct {
	Type EventType
	// Sequence starts at 1 for each reporter tree and strictly increases
	// across the whole tree.
	Sequence uint64
	// Time is UTC.
	Time time.Time
	// RunID is the reporter's own run identifier, never an owner field.
	RunID   string
	AgentID string
	// ParentAgentID is nil at the root, or when the reporter cannot tell.
	ParentAgentID *string
	Depth         int
	Diagnostics   *Diagnostics
	// Compaction is set on HistoryCompaction events only.
	Compaction *CompactionStep
}

type eventJSON struct {
	Type          EventType       `json:"type"`
	Sequence      uint64          `json:"sequence"`
	Time          string          `json:"time"`
	RunID         string          `json:"run_id"`
	AgentID       string          `json:"agent_id"`
	ParentAgentID *string         `json:"parent_agent_id"`
	Depth         int             `json:"depth"`
	Diagnostics   *Diagnostics    `json:"diagnostics,omitempty"`
	Compaction    *CompactionStep `json:"compaction,omitempty"`
}

// MarshalJSON renders the snake_case shape of docs/diagnostics.md.
func (e *Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(eventJSON{Type: e.Type, Sequence: e.Sequence, Time: e.Time.UTC().Format(TimeLayout),
		RunID: e.RunID, AgentID: e.AgentID, ParentAgentID: e.ParentAgentID, Depth: e.Depth, Diagnostics: e.Diagnostics, Compaction: e.Compaction})
}

// String renders one safe line.
func (e *Event) String() string {
	parent := "null"
	if e.ParentAgentID != nil {
		parent = *e.ParentAgentID
	}
	var body fmt.Stringer = e.Diagnostics
	if e.Compaction != nil {
		body = e.Compaction
	}
	return fmt.Sprintf("%s #%d %s run=%s agent=%s parent=%s depth=%d %s", e.Type, e.Sequence,
		e.Time.UTC().Format(TimeLayout), e.RunID, e.AgentID, parent, e.Depth, body)
}

// LogValue implements slog.LogValuer.
func (e *Event) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("type", string(e.Type)),
		slog.Uint64("sequence", e.Sequence),
		slog.String("time", e.Time.UTC().Format(TimeLayout)),
		slog.String("run_id", e.RunID),
		slog.String("agent_id", e.AgentID),
		slog.Int("depth", e.Depth),
	}
	if e.Compaction != nil {
		attrs = append(attrs, slog.Any("compaction", e.Compaction))
	} else {
		attrs = append(attrs, slog.Any("diagnostics", e.Diagnostics))
	}
	if e.ParentAgentID != nil {
		attrs = append(attrs, slog.String("parent_agent_id", *e.ParentAgentID))
	}
	return slog.GroupValue(attrs...)
}

// Reporter receives the events of one agent in a tree of agents. It travels
// in the context (WithReporter); without one, decisions are made the same
// way and nothing is reported.
type Reporter interface {
	RunID() string
	AgentID() string
	Depth() int
	// NextSequence returns the next number of the tree's shared sequence.
	NextSequence() uint64
	// Report delivers one event, best effort: it never fails the decision.
	Report(ctx context.Context, e *Event)
	// Child returns a reporter for a sub-agent: depth+1, this reporter's
	// agent id as parent, same run id and sequence.
	Child(agentID string) Reporter
}

// ParentReporter is the optional Reporter capability that tells the parent
// agent id. A reporter without it reports a null parent.
type ParentReporter interface {
	ParentAgentID() (id string, ok bool)
}

type reporterKey struct{}

// WithReporter returns a context carrying r.
func WithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// ReporterFrom returns the reporter ctx carries, or nil.
func ReporterFrom(ctx context.Context) Reporter {
	r, _ := ctx.Value(reporterKey{}).(Reporter)
	return r
}

// Sink consumes events. Sinks are best effort: an error or a panic is handed
// to the reporter's OnSinkError and never reaches the decision.
type Sink interface {
	Emit(ctx context.Context, e *Event) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, e *Event) error

// Emit calls f.
func (f SinkFunc) Emit(ctx context.Context, e *Event) error { return f(ctx, e) }

// ReporterOptions configure NewReporter.
type ReporterOptions struct {
	// RunID identifies the run; never an owner field.
	RunID string
	// AgentID names the root agent.
	AgentID string
	// Sinks receive every event of the tree, in order.
	Sinks []Sink
	// OnSinkError, when set, receives sink errors and recovered panics.
	OnSinkError func(error)
}

// TreeReporter is the provided Reporter: a root or child agent over one
// shared sequence and one set of sinks. It implements ParentReporter.
type TreeReporter struct {
	shared  *treeShared
	agentID string
	parent  *string
	depth   int
}

type treeShared struct {
	runID   string
	seq     atomic.Uint64
	sinks   []Sink
	onError func(error)
}

// NewReporter returns a root reporter (depth 0, no parent).
func NewReporter(opts ReporterOptions) *TreeReporter {
	return &TreeReporter{
		shared:  &treeShared{runID: opts.RunID, sinks: append([]Sink(nil), opts.Sinks...), onError: opts.OnSinkError},
		agentID: opts.AgentID,
	}
}

// RunID implements Reporter.
func (r *TreeReporter) RunID() string { return r.shared.runID }

// AgentID implements Reporter.
func (r *TreeReporter) AgentID() string { return r.agentID }

// Depth implements Reporter.
func (r *TreeReporter) Depth() int { return r.depth }

// NextSequence implements Reporter.
func (r *TreeReporter) NextSequence() uint64 { return r.shared.seq.Add(1) }

// ParentAgentID implements ParentReporter.
func (r *TreeReporter) ParentAgentID() (string, bool) {
	if r.parent == nil {
		return "", false
	}
	return *r.parent, true
}

// Child implements Reporter.
func (r *TreeReporter) Child(agentID string) Reporter {
	p := r.agentID
	return &TreeReporter{shared: r.shared, agentID: agentID, parent: &p, depth: r.depth + 1}
}

// Report implements Reporter: it hands e to every sink with a context that
// cannot be cancelled, recovering panics.
func (r *TreeReporter) Report(ctx context.Context, e *Event) {
	ctx = context.WithoutCancel(ctx)
	for _, s := range r.shared.sinks {
		r.emit(ctx, s, e)
	}
}

var errSinkPanic = errors.New("progress sink panicked")

func (r *TreeReporter) emit(ctx context.Context, s Sink, e *Event) {
	defer func() {
		if p := recover(); p != nil && r.shared.onError != nil {
			r.shared.onError(errSinkPanic)
		}
	}()
	if err := s.Emit(ctx, e); err != nil && r.shared.onError != nil {
		r.shared.onError(err)
	}
}

// report builds and delivers the event of one decision, if ctx carries a
// reporter.
func report(ctx context.Context, clock func() time.Time, d *Diagnostics) {
	r := ReporterFrom(ctx)
	if r == nil {
		return
	}
	t := OffloadDecision
	if d.op == OpRehydration {
		t = RehydrationDecision
	}
	deliver(ctx, clock, &Event{Type: t, Diagnostics: d})
}

// deliver stamps e with the time, the reporter's identity and the next
// sequence number, and hands it to the reporter ctx carries, if any.
func deliver(ctx context.Context, clock func() time.Time, e *Event) {
	r := ReporterFrom(ctx)
	if r == nil {
		return
	}
	e.Time, e.RunID, e.AgentID, e.Depth = clock().UTC(), r.RunID(), r.AgentID(), r.Depth()
	if pr, ok := r.(ParentReporter); ok {
		if p, ok := pr.ParentAgentID(); ok {
			e.ParentAgentID = &p
		}
	}
	e.Sequence = r.NextSequence()
	func() {
		defer func() { _ = recover() }()
		r.Report(ctx, e)
	}()
}
