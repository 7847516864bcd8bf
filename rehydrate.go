package hybridctx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/viewengine"
	"github.com/hybridctx/hybridctx/workspace"
)

// Request asks for one reference, or a byte range of it, under a budget.
type Request struct {
	// Reference is the reference text as the model or host gave it.
	Reference string
	// Budget is the most bytes that may be returned; it must be > 0.
	Budget int64
	// Offset and Length select a range; Length 0 means to the end. The
	// range is clamped to the body like an HTTP range.
	Offset, Length int64
	// ToolArgument marks a reference a model passed as a tool's argument,
	// replaced by its body before the call is forwarded (docs/gateway.md):
	// the resolved decision's reason is tool_argument instead of
	// digest_verified; every other outcome is unchanged.
	ToolArgument bool
}

// ErrInvalidRequest is wrapped by errors about unusable requests (no event is
// reported for them).
var ErrInvalidRequest = errors.New("invalid rehydration request")

// Segment is content recovered by a successful rehydration. Offload
// recognizes it and never offloads it again, whatever its size. Only a
// Rehydrator constructs one.
type Segment struct {
	ref    artifact.Ref
	offset int64
	size   int64
	body   []byte
	at     time.Time
	valid  bool
	view   View  // what the bytes are: a range or whole lines of the body, or a view's answer
	exact  int64 // how many of body's first bytes are the body's own, from offset
}

// Ref returns the reference the segment was read from.
func (s *Segment) Ref() artifact.Ref { return s.ref }

// Offset returns where in the body the segment starts.
func (s *Segment) Offset() int64 { return s.offset }

// BodySize returns the size of the whole body.
func (s *Segment) BodySize() int64 { return s.size }

// Bytes returns the verified bytes. Callers must not modify them.
func (s *Segment) Bytes() []byte { return s.body }

// RehydratedAt returns when the segment was read.
func (s *Segment) RehydratedAt() time.Time { return s.at }

// SkipOffload is always true: recovered content is never re-offloaded.
func (s *Segment) SkipOffload() bool { return s.valid }

// RehydratorOptions tune a Rehydrator. The zero value means defaults.
type RehydratorOptions struct {
	// Clock returns the current time (segments and event times). Default
	// time.Now.
	Clock func() time.Time
	// QueryMaxBytes is the largest body a query view parses; a larger one is
	// view_failed/limit_exceeded. 0 means DefaultQueryMaxBytes.
	QueryMaxBytes int64
	// QueryTimeout is the time limit of one query; 0 means
	// DefaultQueryTimeout.
	QueryTimeout time.Duration
	// QueryMemoryBytes bounds what one query holds, counted as its own
	// (its body, its decoded document, what its filter produces); 0 means
	// DefaultQueryMemoryBytes.
	QueryMemoryBytes int64
	// QueryLimiter bounds the queries running at once. Share one among
	// every Rehydrator of a process, so that together they hold at most
	// its concurrency × the memory bound; nil means a limiter of this
	// Rehydrator's own with the defaults (DefaultQueryConcurrency,
	// DefaultQueryWait).
	QueryLimiter *QueryLimiter
}

// Rehydrator resolves references for one binding. It is safe for concurrent
// use. Constructing it touches no body.
type Rehydrator struct {
	binding *Binding
	clock   func() time.Time
	query   viewengine.QueryLimits
	limiter *QueryLimiter
}

// NewRehydrator returns a Rehydrator for binding, which must have a store
// (ErrNoWorkspace otherwise).
func NewRehydrator(binding *Binding, opts *RehydratorOptions) (*Rehydrator, error) {
	if binding == nil || binding.store == nil {
		return nil, ErrNoWorkspace
	}
	r := &Rehydrator{binding: binding, clock: time.Now,
		query: viewengine.QueryLimits{MaxBytes: DefaultQueryMaxBytes, Timeout: DefaultQueryTimeout, Memory: DefaultQueryMemoryBytes}}
	if opts != nil && opts.QueryLimiter != nil {
		r.limiter = opts.QueryLimiter
	} else {
		r.limiter, _ = NewQueryLimiter(0, 0) // the defaults: no error
	}
	if opts == nil {
		return r, nil
	}
	if opts.QueryMaxBytes < 0 || opts.QueryTimeout < 0 || opts.QueryMemoryBytes < 0 {
		return nil, fmt.Errorf("%w: query limits must be >= 0", ErrInvalidRequest)
	}
	if opts.Clock != nil {
		r.clock = opts.Clock
	}
	if opts.QueryMaxBytes > 0 {
		r.query.MaxBytes = opts.QueryMaxBytes
	}
	if opts.QueryTimeout > 0 {
		r.query.Timeout = opts.QueryTimeout
	}
	if opts.QueryMemoryBytes > 0 {
		r.query.Memory = opts.QueryMemoryBytes
	}
	return r, nil
}

// Rehydration is the outcome of one rehydration decision.
type Rehydration struct {
	// Ref is the parsed reference (zero for invalid_reference).
	Ref artifact.Ref
	// Segment holds the verified bytes when resolved (Rehydrate only).
	Segment *Segment
	// BodySize is the recorded size of the body when the owner's record was
	// found (0 for unauthorized and invalid_reference), so a caller can say
	// how large it is.
	BodySize int64
	// Offset and Length are the clamped range.
	Offset, Length int64
	// Written is the bytes RehydrateTo wrote.
	Written int64
	// Page describes the answer of a lines, search or query view: what it
	// shows and where to continue (zero for a byte range).
	Page Page

	view View
	diag Diagnostics
}

// View returns what the body was turned into: range, lines, search or query.
func (r *Rehydration) View() View { return r.view }

// Outcome returns the decision's outcome.
func (r *Rehydration) Outcome() Outcome { return r.diag.outcome }

// Reason returns the decision's reason.
func (r *Rehydration) Reason() Reason { return r.diag.reason }

// Diagnostics returns the decision's snapshot: the instance its event carries.
func (r *Rehydration) Diagnostics() *Diagnostics { return &r.diag }

// Rehydrate resolves req (docs/rehydration.md) and returns at most req.Budget verified bytes
// in memory. Checks run in order: arguments (ErrInvalidRequest, no event),
// context, reference syntax (invalid_reference), owner (unauthorized, with
// zero body I/O), existence (missing), budget against the recorded size
// (over_budget, before any body byte is read), digest of the whole body
// (stale, nothing released), then resolved.
func (h *Rehydrator) Rehydrate(ctx context.Context, req Request) (*Rehydration, error) {
	return h.run(ctx, req, nil)
}

// RehydrateTo is Rehydrate streaming the range to w in bounded memory,
// whatever the budget: the whole body is verified before the first byte is
// written, and a body that changes meanwhile aborts with an error wrapping
// workspace.ErrChanged.
func (h *Rehydrator) RehydrateTo(ctx context.Context, req Request, w io.Writer) (*Rehydration, error) {
	if w == nil {
		return nil, fmt.Errorf("%w: nil writer", ErrInvalidRequest)
	}
	return h.run(ctx, req, w)
}

func (h *Rehydrator) run(ctx context.Context, req Request, w io.Writer) (*Rehydration, error) {
	if req.Budget <= 0 || req.Offset < 0 || req.Length < 0 {
		return nil, fmt.Errorf("%w: budget must be > 0, offset and length >= 0", ErrInvalidRequest)
	}
	out, rec, done, err := h.locate(ctx, ViewRange, req.Reference, req.Budget)
	if done || err != nil {
		return out, err
	}
	store := h.binding.store
	out.Offset = min(req.Offset, rec.Size)
	out.Length = rec.Size - out.Offset
	if req.Length > 0 {
		out.Length = min(req.Length, out.Length)
	}
	if out.Length > req.Budget {
		return h.finish(ctx, out, OverBudget, BudgetExceeded, out.Length, req.Budget, 0)
	}
	var body []byte
	if w != nil {
		out.Written, err = store.CopyVerified(ctx, out.Ref, rec.Size, out.Offset, out.Length, w)
	} else {
		body, err = store.ReadVerified(ctx, out.Ref, rec.Size, out.Offset, out.Length)
	}
	switch {
	case err == nil:
	case w != nil && errors.Is(err, workspace.ErrChanged):
		return nil, err
	case errors.Is(err, workspace.ErrCorrupt):
		return h.finish(ctx, out, Stale, DigestMismatch, out.Length, req.Budget, 0)
	case errors.Is(err, fs.ErrNotExist):
		return h.finish(ctx, out, Missing, BodyMissing, -1, req.Budget, 0)
	default:
		return nil, err
	}
	if w == nil {
		out.Segment = h.segment(ViewRange, out.Ref, out.Offset, rec.Size, body)
	}
	h.touch(ctx, rec)
	reason := DigestVerified
	if req.ToolArgument {
		reason = ToolArgument
	}
	return h.finish(ctx, out, Resolved, reason, out.Length, req.Budget, 0)
}

// locate runs the checks every view shares, in the order of docs/rehydration.md: context,
// reference syntax, owner (zero body I/O), existence. When one of them
// decides, done is true and out carries the decision (its event reported).
func (h *Rehydrator) locate(ctx context.Context, view View, text string, budget int64) (out *Rehydration, rec artifact.Record, done bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, rec, true, err
	}
	out = &Rehydration{view: view}
	r, err := artifact.ParseRef(text)
	if err != nil {
		out, err = h.finish(ctx, out, InvalidReference, MalformedReference, -1, budget, len(text))
		return out, rec, true, err
	}
	out.Ref = r
	store := h.binding.store
	rec, err = store.GetRecord(ctx, h.binding.owner, r)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		out, err = h.finish(ctx, out, Unauthorized, OwnerMismatch, -1, budget, 0)
		return out, rec, true, err
	case err != nil:
		return nil, rec, true, err
	}
	out.BodySize = rec.Size
	if _, err := store.StatBody(ctx, r); errors.Is(err, fs.ErrNotExist) {
		out, err = h.finish(ctx, out, Missing, BodyMissing, -1, budget, 0)
		return out, rec, true, err
	} else if err != nil {
		return nil, rec, true, err
	}
	return out, rec, false, nil
}

func (h *Rehydrator) segment(v View, r artifact.Ref, off, size int64, body []byte) *Segment {
	return &Segment{ref: r, offset: off, size: size, body: body, at: h.clock().UTC(), valid: true,
		view: v, exact: int64(len(body))}
}

// Range returns the bytes of the body the segment holds exactly: from
// offset, length bytes. For a range or lines read they are the segment's
// bytes (before a note WithNote added); for a search or query answer, which
// is not a part of the body, they are the whole body.
func (s *Segment) Range() (offset, length int64) {
	if s.view == ViewRange || s.view == ViewLines {
		return s.offset, s.exact
	}
	return 0, s.size
}

// touch refreshes the record's last-used time, at most hourly: reading a
// body is using it, so retention keeps what is still being read.
func (h *Rehydrator) touch(ctx context.Context, rec artifact.Record) {
	if now := h.clock(); now.Sub(rec.LastUsedAt) >= workspace.TouchEvery {
		_ = h.binding.store.TouchRecord(ctx, h.binding.owner, rec.Ref, now)
	}
}

func (h *Rehydrator) finish(ctx context.Context, out *Rehydration, oc Outcome, r Reason, observed, budget int64, given int) (*Rehydration, error) {
	ref := ""
	if oc != InvalidReference {
		ref = out.Ref.String()
	}
	if err := initRehydrationDiagnostics(&out.diag, out.view, oc, r, observed, budget, ref, given); err != nil {
		return nil, err
	}
	report(ctx, h.clock, &out.diag)
	return out, nil
}
