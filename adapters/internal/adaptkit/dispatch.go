package adaptkit

import (
	"context"
	"encoding/json"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/readtools"
)

// Dispatcher answers the tool calls of one model reply for the SDK adapters
// (anthropic, openai): read tool calls itself, every other tool through the
// host's run function with its result decided by the Offloader. It is safe
// for concurrent use.
type Dispatcher struct {
	off     *hybridctx.Offloader
	reads   *readtools.Set
	hook    func(context.Context, string, *hybridctx.OffloadResult)
	compact *hybridctx.Compactor // nil without a history budget
}

// HandlerOptions tune the Handler of an SDK adapter (anthropic, openai),
// which exports them as its Options. A nil *HandlerOptions means defaults.
type HandlerOptions struct {
	// Budget caps every read; 0 means the read tools' default.
	Budget int64
	// Names overrides the read tools' names; empty names keep those of the
	// Offloader's policy (the names its notices point to).
	Names readtools.Names
	// OnDecision, when set, receives every offload decision with the tool
	// name it decided, for the host (the model sees only the notice). It
	// runs on the goroutine that called the Handler's method.
	OnDecision func(ctx context.Context, tool string, out *hybridctx.OffloadResult)
	// Compaction, when set, is told of every compaction step of the
	// policy's history budget (sink.Summary counts them).
	Compaction hybridctx.CompactionObserver
}

// NewHandlerDispatcher returns the Dispatcher of an SDK adapter's Handler:
// it decides results with off and serves the read tools with reh, named as
// off's notices name them unless opts overrides them, capped at opts'
// budget; opts' hook sees every decision of a host tool and its observer
// every compaction step.
func NewHandlerDispatcher(off *hybridctx.Offloader, reh *hybridctx.Rehydrator, opts *HandlerOptions) (*Dispatcher, error) {
	var o HandlerOptions
	if opts != nil {
		o = *opts
	}
	if off == nil {
		return nil, ErrNilOffloader
	}
	reads, err := NewReads(reh, readtools.NamesOf(o.Names.Over(off.Policy())), o.Budget)
	if err != nil {
		return nil, err
	}
	return &Dispatcher{off: off, reads: reads, hook: o.OnDecision, compact: NewCompactor(off, o.Compaction)}, nil
}

// Tools returns the read tools' SDK-neutral definitions.
func (d *Dispatcher) Tools() []readtools.Tool { return d.reads.Tools() }

// Handle answers one call: a read tool's exact answer or categorical
// refusal; else run's result, inline or replaced by the bounded notice. An
// error from run, a nil run, or a context cancelled before the decision is
// the categorical failure, never the error's text.
func (d *Dispatcher) Handle(ctx context.Context, id, name string, input json.RawMessage,
	run func(context.Context, string, json.RawMessage) (string, error)) Result {
	if d.reads.Has(name) {
		r, _ := Read(ctx, d.reads, name, input)
		return r
	}
	if run == nil {
		return Failed()
	}
	text, err := run(ctx, name, input)
	if err != nil {
		return Failed()
	}
	r, err := Decide(ctx, d.off, hybridctx.Call{Tool: name, ID: id}, text)
	if err != nil {
		return Failed()
	}
	if d.hook != nil {
		d.hook(ctx, name, r.Offload)
	}
	return r
}
