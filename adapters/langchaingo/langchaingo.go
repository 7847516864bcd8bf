// Package langchaingo adapts hybridctx to LangChainGo
// (github.com/tmc/langchaingo): Wrap bounds a tool's output with an
// Offloader, and ReadTools are the read tools as tools.Tool values whose
// input is the tool's JSON arguments as a string.
//
// LangChainGo's agents stop the whole run on a tool's error; a wrapped
// tool's error instead becomes the categorical failure notice as its
// output, so the model can carry on and the error's text never reaches it.
//
// It lives in its own module so that the hybridctx core does not depend on
// LangChainGo.
package langchaingo

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tmc/langchaingo/tools"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/readtools"
)

// Options tune the read tools. A nil *Options means defaults.
type Options struct {
	// Budget caps every read; 0 means the read tools' default.
	Budget int64
	// Names overrides the read tools' names; empty names keep those of the
	// Offloader's policy (Compact) or the defaults (NewReadTools). Leave it
	// empty and name the tools in the policy: NewReadTools then needs
	// readtools.NamesOf(off.Policy()), the names the notices point to.
	Names readtools.Names
	// Compaction, when set (Compact), is told of every compaction step of the
	// policy's history budget (sink.Summary counts them).
	Compaction hybridctx.CompactionObserver
}

// ErrNilRehydrator is returned by NewReadTools for a nil Rehydrator.
var ErrNilRehydrator = adaptkit.ErrNilRehydrator

// Wrap returns t with its output decided by off: the same name and
// description, the output inline or the bounded notice in its place. An
// error from t becomes the categorical failure notice (a cancelled context
// stays an error). A read tool from ReadTools is returned as it is. t and
// off must not be nil.
func Wrap(t tools.Tool, off *hybridctx.Offloader) tools.Tool {
	if t == nil || off == nil {
		panic("langchaingo.Wrap: nil tool or Offloader")
	}
	if _, ok := t.(*readTool); ok {
		return t // recovered content is never offloaded again
	}
	return &bounded{t: t, off: off}
}

type bounded struct {
	t     tools.Tool
	off   *hybridctx.Offloader
	calls atomic.Uint64
}

// Name implements tools.Tool.
func (b *bounded) Name() string { return b.t.Name() }

// Description implements tools.Tool.
func (b *bounded) Description() string { return b.t.Description() }

// Call runs the wrapped tool and decides its output.
func (b *bounded) Call(ctx context.Context, input string) (string, error) {
	out, err := b.t.Call(ctx, input)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return adaptkit.ToolFailedNotice, nil
	}
	name := b.t.Name()
	r, err := adaptkit.Decide(ctx, b.off, hybridctx.Call{Tool: name, ID: "call-" + strconv.FormatUint(b.calls.Add(1), 10)}, out)
	if err != nil {
		return "", err
	}
	return r.Text, nil
}

// NewReadTools returns the read tools over reh (read_artifact,
// search_artifact, query_artifact). Each takes the tool's JSON arguments
// as its input string and returns the exact answer, or the categorical
// refusal text, as its output; its error is non-nil only for a cancelled
// context. Invalid names are an error wrapping hybridctx.ErrInvalidPolicy.
func NewReadTools(reh *hybridctx.Rehydrator, opts *Options) ([]tools.Tool, error) {
	set, err := opts.reads(reh)
	if err != nil {
		return nil, err
	}
	var out []tools.Tool
	for _, d := range set.Tools() {
		out = append(out, &readTool{set: set, name: d.Name,
			desc: strings.TrimSpace(d.Description) + " Input: a JSON object matching this schema: " + string(d.InputSchema)})
	}
	return out, nil
}

// ReadTools is NewReadTools for hosts whose arguments are known good: it
// panics where NewReadTools returns an error.
func ReadTools(reh *hybridctx.Rehydrator, opts *Options) []tools.Tool {
	ts, err := NewReadTools(reh, opts)
	if err != nil {
		panic("langchaingo.ReadTools: " + err.Error())
	}
	return ts
}

type readTool struct {
	set        *readtools.Set
	name, desc string
}

// Name implements tools.Tool.
func (r *readTool) Name() string { return r.name }

// Description implements tools.Tool: the shared description, then the
// arguments' JSON schema (the agent sees no other schema).
func (r *readTool) Description() string { return r.desc }

// Call answers one read.
func (r *readTool) Call(ctx context.Context, input string) (string, error) {
	res, _ := adaptkit.Read(ctx, r.set, r.name, adaptkit.RawArgs(strings.TrimSpace(input)))
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return res.Text, nil
}

// reads returns the read tools' set over reh under o (nil: defaults).
func (o *Options) reads(reh *hybridctx.Rehydrator) (*readtools.Set, error) {
	if o == nil {
		return adaptkit.NewReads(reh, readtools.Names{}, 0)
	}
	return adaptkit.NewReads(reh, o.Names, o.Budget)
}
