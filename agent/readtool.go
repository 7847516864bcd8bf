package agent

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/readtools"
)

// DefaultBudgetCap is the read tools' budget cap unless the host sets one:
// the window the notice suggests.
const DefaultBudgetCap = readtools.DefaultBudgetCap

// The read tools' definitions live in package readtools; these errors are
// its own values, named here for the hosts that only import agent.
var (
	// ErrInvalidArguments wraps every complaint about a read tool call's
	// arguments; its text is meant for the model.
	ErrInvalidArguments = readtools.ErrInvalidArguments
	// ErrReadFailed is wrapped by a read tool's error when the workspace
	// failed without a decision (a storage error). The error's text is
	// categorical; errors.Is and errors.As still reach the cause.
	ErrReadFailed = readtools.ErrReadFailed
)

// ErrReadRefused is wrapped by every *ReadError.
var ErrReadRefused = errors.New("read_artifact refused")

// ReadError is a read tool's answer to any rehydration outcome other than
// resolved. Its Error text is the categorical refusal of package readtools,
// meant for the model, and says what to do next; it never holds content, a
// path or an owner.
type ReadError struct {
	// Rehydration is the decision, with its diagnostics, for the host.
	Rehydration *hybridctx.Rehydration
	// Budget is the budget the call ran under: min(max_bytes, cap).
	Budget int64

	text string
}

// Error implements error.
func (e *ReadError) Error() string { return e.text }

// Unwrap returns ErrReadRefused.
func (e *ReadError) Unwrap() error { return ErrReadRefused }

// ReadToolOptions tune the read tools. The zero value means defaults.
type ReadToolOptions struct {
	// Names names the tools, each empty name keeping its default
	// (readtools.Names; the names are checked by Policy.Validate). They
	// should be the names the offloader's notices point to:
	// readtools.NamesOf(off.Policy()).
	Names readtools.Names
	// BudgetCap bounds every call: the budget is min(max_bytes, BudgetCap),
	// or BudgetCap when the model gives no max_bytes. 0 means
	// DefaultBudgetCap.
	BudgetCap int64
}

// ReadTools are the three read tools of package readtools as agent tools:
// read_artifact, search_artifact and query_artifact, run by the host
// binding's Rehydrator, so the model can read only its owner's artifacts.
type ReadTools struct {
	set *readtools.Set
}

// NewReadTools returns the read tools over reh. Bad or clashing names or a
// negative cap are errors wrapping hybridctx.ErrInvalidPolicy; a nil reh
// is readtools.ErrNilRehydrator.
func NewReadTools(reh *hybridctx.Rehydrator, opts *ReadToolOptions) (*ReadTools, error) {
	var o readtools.Options
	if opts != nil {
		o = readtools.Options{BudgetCap: opts.BudgetCap, Names: opts.Names}
	}
	set, err := readtools.New(reh, &o)
	if err != nil {
		return nil, err
	}
	return &ReadTools{set: set}, nil
}

// Set returns the underlying definitions.
func (r *ReadTools) Set() *readtools.Set { return r.set }

// Read, Search and Query return one tool each.
func (r *ReadTools) Read() *ReadTool   { return &ReadTool{set: r.set, kind: readtools.Read} }
func (r *ReadTools) Search() *ReadTool { return &ReadTool{set: r.set, kind: readtools.Search} }
func (r *ReadTools) Query() *ReadTool  { return &ReadTool{set: r.set, kind: readtools.Query} }

// Tools returns the three tools, ready for a Loop.
func (r *ReadTools) Tools() []Tool {
	return []Tool{r.Read().Tool(), r.Search().Tool(), r.Query().Tool()}
}

// ReadTool is one read tool. It is safe for concurrent use.
type ReadTool struct {
	set  *readtools.Set
	kind readtools.Kind
}

// NewReadTool returns read_artifact over reh (see NewReadTools for all
// three).
func NewReadTool(reh *hybridctx.Rehydrator, opts *ReadToolOptions) (*ReadTool, error) {
	r, err := NewReadTools(reh, opts)
	if err != nil {
		return nil, err
	}
	return r.Read(), nil
}

// Name returns the tool's name.
func (t *ReadTool) Name() string { return t.set.Tool(t.kind).Name }

// BudgetCap returns the host's cap on every call.
func (t *ReadTool) BudgetCap() int64 { return t.set.BudgetCap() }

// Spec returns the tool's spec for the model.
func (t *ReadTool) Spec() ToolSpec {
	d := t.set.Tool(t.kind)
	return ToolSpec{Name: d.Name, Description: d.Description, Parameters: d.InputSchema}
}

// Tool returns the read tool as a Tool whose body is Call.
func (t *ReadTool) Tool() Tool { return Tool{Spec: t.Spec(), Func: t.Call} }

// Budget returns the budget of a call whose model-given max_bytes is
// maxBytes (0 for none): min(maxBytes, cap).
func (t *ReadTool) Budget(maxBytes int64) int64 { return t.set.Budget(maxBytes) }

// Read parses args and runs one decision under the budget. Every
// categorical outcome comes back as a *Rehydration with a nil error (one
// event each). The error is non-nil only without a decision: invalid
// arguments (wrapping ErrInvalidArguments; no event), a cancelled context or
// a storage failure (wrapping ErrReadFailed).
func (t *ReadTool) Read(ctx context.Context, args json.RawMessage) (*hybridctx.Rehydration, error) {
	res, err := t.set.CallKind(ctx, t.kind, args)
	if err != nil {
		return nil, err
	}
	if res.Rehydration == nil {
		return nil, res.Err
	}
	return res.Rehydration, nil
}

// Call is the tool body: a resolved call returns the *hybridctx.Segment
// (which a Middleware inlines whatever its size; a lines read that stopped
// early carries its continuation note after the bytes); any other outcome
// returns a *ReadError the model can act on; invalid arguments return an
// error wrapping ErrInvalidArguments, a storage failure one wrapping
// ErrReadFailed.
func (t *ReadTool) Call(ctx context.Context, args json.RawMessage) (any, error) {
	res, err := t.set.CallKind(ctx, t.kind, args)
	switch {
	case err != nil:
		return nil, err
	case res.Rehydration == nil:
		return nil, res.Err
	case res.IsError:
		return nil, &ReadError{Rehydration: res.Rehydration, Budget: res.Budget, text: res.Text}
	}
	return res.Segment.WithNote(res.Note), nil
}
