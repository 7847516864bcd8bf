package hybridctx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/hybridctx/hybridctx/internal/viewengine"
	"github.com/hybridctx/hybridctx/workspace"
)

// Limits of the targeted views (docs/rehydration.md).
const (
	// DefaultLineCount is the lines a LinesRequest returns when it names no
	// count.
	DefaultLineCount = 100
	// MaxPatternBytes bounds a search pattern.
	MaxPatternBytes = viewengine.MaxPatternBytes
	// MaxFilterBytes bounds a query filter.
	MaxFilterBytes = 1000
	// MaxContextLines bounds SearchRequest.ContextLines.
	MaxContextLines = 10
	// DefaultMaxMatches is the matches a search shows when it names no
	// maximum.
	DefaultMaxMatches = 50
	// SearchLineBytes is the longest line a search shows whole; a longer
	// one is cut to this many bytes around its match.
	SearchLineBytes = viewengine.LineBytes
	// DefaultQueryMemoryBytes bounds what one query holds, counted as its
	// own (docs/rehydration.md): its body while it is read, its document
	// as it is decoded, what its filter produces: 64 MiB.
	DefaultQueryMemoryBytes = 64 << 20
	// DefaultQueryMaxBytes is the largest body a query reads unless
	// RehydratorOptions.QueryMaxBytes sets another limit: a quarter of the
	// memory bound (16 MiB), since a decoded document takes about three
	// times its text, or more.
	DefaultQueryMaxBytes = DefaultQueryMemoryBytes / 4
	// DefaultQueryTimeout is the time limit of one query.
	DefaultQueryTimeout = 2 * time.Second
)

// Page describes the answer of a lines, search or query view: what it shows
// and where to continue.
type Page struct {
	// Total is the body's line count (lines), every matching line
	// (search), or every result of the filter (query).
	Total int64
	// First is the first line returned (lines) or the 1-based index of the
	// first match or result shown (search, query); Count how many.
	First, Count int64
	// Next is where to continue when the answer stopped early: the
	// start_line (lines) or skip (search, query) of the next call; 0 when
	// nothing is left.
	Next int64
	// LineOffset and LineLength locate, for a lines view refused as
	// over_budget, the first requested line in the body, so it can be read
	// by byte range.
	LineOffset, LineLength int64
	// ItemBytes is, for a resolved search or query, how many leading
	// bytes of the answer are its items (matching and context lines, or
	// results); the summary line follows them. The read tools show the
	// whole answer; a host may show the items alone and the summary apart
	// (the command line prints it on standard error).
	ItemBytes int64
	// Summary is that summary line's count, "<M> matches (showing
	// <a>-<b>)", without how to continue (Next says where) or the newline;
	// "" for lines and range.
	Summary string
}

// LinesRequest asks for whole lines of a body (the lines view).
type LinesRequest struct {
	// Reference is the reference text, as given.
	Reference string
	// Budget is the most bytes returned; it must be > 0.
	Budget int64
	// StartLine is the first line, 1-based; it must be >= 1.
	StartLine int64
	// LineCount is the lines wanted; 0 means DefaultLineCount.
	LineCount int64
}

// SearchRequest asks for the lines of a body matching a pattern (the search
// view).
type SearchRequest struct {
	// Reference is the reference text, as given.
	Reference string
	// Budget bounds the whole answer, summary line included; it must be > 0.
	Budget int64
	// Pattern is a literal, or Go RE2 syntax when Regex is set; 1 to
	// MaxPatternBytes bytes.
	Pattern string
	// Regex makes Pattern a regular expression.
	Regex bool
	// IgnoreCase matches without regard to case.
	IgnoreCase bool
	// ContextLines is the lines shown before and after each match, 0 to
	// MaxContextLines.
	ContextLines int64
	// MaxMatches is the most matches shown; 0 means DefaultMaxMatches.
	MaxMatches int64
	// Skip is the matches passed over before the first one shown.
	Skip int64
}

// QueryRequest asks for the results of a jq filter over a JSON body (the
// query view).
type QueryRequest struct {
	// Reference is the reference text, as given.
	Reference string
	// Budget bounds the whole answer, summary line included; it must be > 0.
	Budget int64
	// Filter is a jq program, 1 to MaxFilterBytes bytes, without access to
	// the environment, other inputs or I/O.
	Filter string
	// Skip is the results passed over before the first one shown.
	Skip int64
}

// Validate reports whether r is usable; the error wraps ErrInvalidRequest.
func (r LinesRequest) Validate() error {
	if r.Budget <= 0 || r.StartLine < 1 || r.LineCount < 0 {
		return fmt.Errorf("%w: budget must be > 0, start line >= 1, line count >= 0", ErrInvalidRequest)
	}
	return nil
}

// decision maps an engine's answer to its outcome and reason.
func decision(a viewengine.Answer) (Outcome, Reason) {
	switch a.Outcome {
	case viewengine.Resolved:
		return Resolved, DigestVerified
	case viewengine.OverBudget:
		return OverBudget, BudgetExceeded
	}
	switch a.Failure {
	case viewengine.NotJSON:
		return ViewFailed, NotJSON
	case viewengine.FilterError:
		return ViewFailed, FilterError
	}
	return ViewFailed, LimitExceeded
}

// ReadLines resolves req with the lines view (docs/rehydration.md): the checks of
// Rehydrate in the same order, then the exact bytes of whole lines, as many
// as fit the budget. Memory is bounded by the budget.
func (h *Rehydrator) ReadLines(ctx context.Context, req LinesRequest) (*Rehydration, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	count := req.LineCount
	if count == 0 {
		count = DefaultLineCount
	}
	return h.runView(ctx, ViewLines, req.Reference, req.Budget, nil, func(int64) viewengine.Scanner {
		return viewengine.NewLines(req.StartLine, count, req.Budget)
	})
}

// runView runs the checks of docs/rehydration.md for a view, then reads the body once,
// hashing it while sc scans it, and releases sc's answer only when the
// digest verified. Exactly one event is reported per decision.
//
// A query (gate non-nil) first takes a slot of its limiter; refused one,
// it still reads the body to verify its digest (nothing held) before it
// is decided view_failed/busy, as every view_failed is.
func (h *Rehydrator) runView(ctx context.Context, view View, text string, budget int64, gate *QueryLimiter, mk func(size int64) viewengine.Scanner) (*Rehydration, error) {
	out, rec, done, err := h.locate(ctx, view, text, budget)
	if done || err != nil {
		return out, err
	}
	busy := false
	if gate != nil {
		release, err := gate.acquire(ctx)
		switch {
		case errors.Is(err, errBusy):
			busy = true
		case err != nil:
			return nil, err // the caller gave up: no decision
		default:
			defer release()
		}
	}
	var sc viewengine.Scanner = verifyOnly{}
	if !busy {
		sc = mk(rec.Size)
	}
	err = h.binding.store.ScanVerified(ctx, out.Ref, rec.Size, sc.Scan)
	switch {
	case err == nil:
	case errors.Is(err, workspace.ErrCorrupt):
		return h.finish(ctx, out, Stale, DigestMismatch, 0, budget, 0)
	case errors.Is(err, fs.ErrNotExist):
		return h.finish(ctx, out, Missing, BodyMissing, -1, budget, 0)
	default:
		return nil, err
	}
	if busy {
		return h.finish(ctx, out, ViewFailed, Busy, 0, budget, 0)
	}
	a := sc.Answer(ctx, rec.Size)
	if err := ctx.Err(); err != nil {
		return nil, err // the caller gave up: no decision
	}
	out.Page = Page(a.Page)
	h.touch(ctx, rec)
	outcome, reason := decision(a)
	if outcome == Resolved {
		out.Offset, out.Length = a.Offset, int64(len(a.Body))
		out.Segment = h.segment(view, out.Ref, a.Offset, rec.Size, a.Body)
	}
	return h.finish(ctx, out, outcome, reason, a.Observed, budget, 0)
}

// Validate reports whether r is usable, compiling its pattern; the error
// wraps ErrInvalidRequest and never repeats the pattern.
func (r SearchRequest) Validate() error {
	_, err := r.compile()
	return err
}

func (r SearchRequest) compile() (*viewengine.Matcher, error) {
	switch {
	case r.Budget <= 0 || r.Skip < 0 || r.MaxMatches < 0:
		return nil, fmt.Errorf("%w: budget must be > 0, skip and max matches >= 0", ErrInvalidRequest)
	case r.ContextLines < 0 || r.ContextLines > MaxContextLines:
		return nil, fmt.Errorf("%w: context lines must be 0 to %d", ErrInvalidRequest, MaxContextLines)
	case r.Pattern == "":
		return nil, fmt.Errorf("%w: the pattern is empty", ErrInvalidRequest)
	case len(r.Pattern) > MaxPatternBytes:
		return nil, fmt.Errorf("%w: the pattern is longer than %d bytes", ErrInvalidRequest, MaxPatternBytes)
	}
	m, err := viewengine.NewMatcher(r.Pattern, r.Regex, r.IgnoreCase)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return m, nil
}

// Search resolves req with the search view (docs/rehydration.md): the checks of Rehydrate
// in the same order, then the matching lines grep -n style with a summary
// line, the whole answer at most the budget. Memory is bounded by the budget
// plus one capped line.
func (h *Rehydrator) Search(ctx context.Context, req SearchRequest) (*Rehydration, error) {
	m, err := req.compile()
	if err != nil {
		return nil, err
	}
	limit := req.MaxMatches
	if limit == 0 {
		limit = DefaultMaxMatches
	}
	return h.runView(ctx, ViewSearch, req.Reference, req.Budget, nil, func(int64) viewengine.Scanner {
		return viewengine.NewSearch(m, int(req.ContextLines), req.Skip, limit, req.Budget)
	})
}

// Validate reports whether r is usable, parsing and checking its filter;
// the error wraps ErrInvalidRequest and never repeats the filter.
func (r QueryRequest) Validate() error {
	_, err := r.compile(DefaultQueryMemoryBytes)
	return err
}

func (r QueryRequest) compile(memory int64) (*viewengine.Filter, error) {
	switch {
	case r.Budget <= 0 || r.Skip < 0:
		return nil, fmt.Errorf("%w: budget must be > 0, skip >= 0", ErrInvalidRequest)
	case strings.TrimSpace(r.Filter) == "":
		return nil, fmt.Errorf("%w: the filter is empty", ErrInvalidRequest)
	case len(r.Filter) > MaxFilterBytes:
		return nil, fmt.Errorf("%w: the filter is longer than %d bytes", ErrInvalidRequest, MaxFilterBytes)
	}
	f, err := viewengine.CompileFilter(r.Filter, memory)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return f, nil
}

// Query resolves req with the query view (docs/rehydration.md): the checks of Rehydrate in
// the same order, then the filter's results as compact JSON, one per line,
// paged with skip and ended by a summary line, the whole answer at most the
// budget. The body is held parsed while the filter runs; a body larger than
// the query size limit, or whose decoded document or filter's values are
// over the query memory bound, is view_failed/limit_exceeded. At most the
// limiter's concurrency queries run at once; one that waited past the
// limiter's wait is view_failed/busy. The filter runs in a
// sandbox without access to the environment, other inputs or I/O, every
// step bounded (internal/viewengine).
func (h *Rehydrator) Query(ctx context.Context, req QueryRequest) (*Rehydration, error) {
	f, err := req.compile(h.query.Memory)
	if err != nil {
		return nil, err
	}
	return h.runView(ctx, ViewQuery, req.Reference, req.Budget, h.limiter, func(size int64) viewengine.Scanner {
		return viewengine.NewQuery(f, req.Skip, req.Budget, size, h.query)
	})
}

// verifyOnly is the scanner of a query refused as busy: the body is hashed
// to verify its digest, nothing of it is kept.
type verifyOnly struct{}

func (verifyOnly) Scan(int64, []byte) error { return nil }

func (verifyOnly) Answer(context.Context, int64) viewengine.Answer { return viewengine.Answer{} }
