package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/hybridctx/hybridctx"
)

// DefaultBudgetCap is the read tool's budget cap unless the host sets one:
// the window the notice suggests.
const DefaultBudgetCap = 65536

// ErrReadRefused is wrapped by every *ReadError.
var ErrReadRefused = errors.New("read_artifact refused")

// ReadError is the read tool's answer to any rehydration outcome other than
// resolved. Its Error text is categorical, meant for the model, and says
// what to do next; it never holds content, a path or an owner.
type ReadError struct {
	// Rehydration is the decision, with its diagnostics, for the host.
	Rehydration *hybridctx.Rehydration
	// Budget is the budget the read ran under: min(max_bytes, cap).
	Budget int64
}

// Error implements error.
func (e *ReadError) Error() string {
	r := e.Rehydration
	head := "hybridctx: " + r.Outcome().String() + " (" + r.Reason().String() + "): "
	switch r.Outcome() {
	case hybridctx.OverBudget:
		b := strconv.FormatInt(e.Budget, 10)
		return head + "the range is " + strconv.FormatInt(r.Length, 10) + " bytes, the budget " + b +
			"; use offset/length to read at most " + b + " bytes at a time (the body is " +
			strconv.FormatInt(r.BodySize, 10) + " bytes)."
	case hybridctx.Unauthorized:
		return head + "no artifact with this reference belongs to this conversation."
	case hybridctx.Missing:
		return head + "the artifact's body is no longer stored; run the tool that produced it again."
	case hybridctx.Stale:
		return head + "the stored body no longer matches its reference; run the tool that produced it again."
	case hybridctx.InvalidReference:
		return head + "a reference is artifact://sha256/ followed by 64 lowercase hex digits, the first line of the notice."
	}
	return head + "the artifact cannot be read."
}

// Unwrap returns ErrReadRefused.
func (e *ReadError) Unwrap() error { return ErrReadRefused }

// ErrReadFailed is wrapped by the read tool's error when the workspace
// failed without a decision (a storage error). The error's text is
// categorical, so no path or driver message reaches the model; errors.Is and
// errors.As still reach the cause.
var ErrReadFailed = errors.New("hybridctx: the workspace could not be read; the call may be retried")

type readFailed struct{ cause error }

func (e readFailed) Error() string   { return ErrReadFailed.Error() }
func (e readFailed) Unwrap() []error { return []error{ErrReadFailed, e.cause} }

// ReadToolOptions tune a ReadTool. The zero value means defaults.
type ReadToolOptions struct {
	// Name is the tool's name; empty means hybridctx.DefaultReadToolName.
	// It must be a valid Policy.ReadToolName, and should be the name the
	// offloader's notices point to.
	Name string
	// BudgetCap bounds every read: the budget is min(max_bytes, BudgetCap),
	// or BudgetCap when the model gives no max_bytes. 0 means
	// DefaultBudgetCap.
	BudgetCap int64
}

// ReadTool is the explicit read tool read_artifact {reference, offset?,
// length?, max_bytes?}. It runs the Rehydrator of the host's binding, so the
// model can read only its owner's artifacts. It is safe for concurrent use.
type ReadTool struct {
	reh  *hybridctx.Rehydrator
	name string
	cap  int64
}

// ErrNilRehydrator is returned by NewReadTool for a nil Rehydrator.
var ErrNilRehydrator = errors.New("agent: nil rehydrator")

// NewReadTool returns the read tool over reh. A bad name or a negative cap
// is an error wrapping hybridctx.ErrInvalidPolicy.
func NewReadTool(reh *hybridctx.Rehydrator, opts *ReadToolOptions) (*ReadTool, error) {
	if reh == nil {
		return nil, ErrNilRehydrator
	}
	t := &ReadTool{reh: reh, name: hybridctx.DefaultReadToolName, cap: DefaultBudgetCap}
	if opts != nil {
		if opts.Name != "" {
			t.name = opts.Name
		}
		if opts.BudgetCap < 0 {
			return nil, fmt.Errorf("%w: read tool budget cap must be >= 0", hybridctx.ErrInvalidPolicy)
		}
		if opts.BudgetCap > 0 {
			t.cap = opts.BudgetCap
		}
	}
	// The policy validates the name by the same rules as the notice's.
	if err := (hybridctx.Policy{InlineThreshold: 1, ReadToolName: t.name}).Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// Name returns the tool's name.
func (t *ReadTool) Name() string { return t.name }

// BudgetCap returns the host's cap on every read.
func (t *ReadTool) BudgetCap() int64 { return t.cap }

const readToolDescription = "Read a tool result that was stored outside this conversation. " +
	"Pass the reference from the first line of its notice. Optional offset and length select a byte range " +
	"(length 0 or absent reads to the end); max_bytes is the most bytes to return, capped by the host. " +
	"A range larger than the budget is refused, so read large results in parts."

// ReadToolSchema returns the JSON schema of read_artifact's arguments.
func ReadToolSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{` +
		`"reference":{"type":"string","description":"artifact://sha256/<64 lowercase hex>, the first line of the notice","pattern":"^artifact://sha256/[0-9a-f]{64}$"},` +
		`"offset":{"type":"integer","minimum":0,"description":"first byte to read (default 0)"},` +
		`"length":{"type":"integer","minimum":0,"description":"bytes to read; 0 or absent reads to the end"},` +
		`"max_bytes":{"type":"integer","minimum":1,"description":"most bytes to return; the host caps it"}},` +
		`"required":["reference"],"additionalProperties":false}`)
}

// Spec returns the tool's spec for the model.
func (t *ReadTool) Spec() ToolSpec {
	return ToolSpec{Name: t.name, Description: readToolDescription, Parameters: ReadToolSchema()}
}

// Tool returns the read tool as a Tool whose body is Call.
func (t *ReadTool) Tool() Tool { return Tool{Spec: t.Spec(), Func: t.Call} }

// Budget returns the budget of a read whose model-given max_bytes is
// maxBytes (0 for none): min(maxBytes, cap).
func (t *ReadTool) Budget(maxBytes int64) int64 {
	if maxBytes <= 0 {
		return t.cap
	}
	return min(maxBytes, t.cap)
}

// Read parses args and runs one rehydration under the budget. Every
// categorical outcome comes back as a *Rehydration with a nil error (one
// event each). The error is non-nil only without a decision: invalid
// arguments (wrapping ErrInvalidArguments; no event), a cancelled context or
// a storage failure.
func (t *ReadTool) Read(ctx context.Context, args json.RawMessage) (*hybridctx.Rehydration, error) {
	r, _, err := t.read(ctx, args)
	return r, err
}

func (t *ReadTool) read(ctx context.Context, args json.RawMessage) (*hybridctx.Rehydration, int64, error) {
	a, err := ParseReadArgs(args)
	if err != nil {
		return nil, 0, err
	}
	budget := t.Budget(a.MaxBytes)
	r, err := t.reh.Rehydrate(ctx, hybridctx.Request{
		Reference: a.Reference, Budget: budget, Offset: a.Offset, Length: a.Length,
		Source: hybridctx.SourceToolRequest,
	})
	return r, budget, err
}

// Call is the tool body: a resolved read returns the *hybridctx.Segment
// (which a Middleware inlines whatever its size); any other outcome returns
// a *ReadError the model can act on; invalid arguments return an error
// wrapping ErrInvalidArguments.
func (t *ReadTool) Call(ctx context.Context, args json.RawMessage) (any, error) {
	r, budget, err := t.read(ctx, args)
	switch {
	case err == nil:
	case errors.Is(err, ErrInvalidArguments) || ctx.Err() != nil:
		return nil, err
	default:
		return nil, readFailed{cause: err}
	}
	if r.Outcome() != hybridctx.Resolved {
		return nil, &ReadError{Rehydration: r, Budget: budget}
	}
	return r.Segment, nil
}
