package viewengine

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"time"

	"github.com/itchyny/gojq"
)

// The query sandbox. A filter is parsed, checked and rewritten before it
// runs (sandbox.go): it may call only the built-in functions the sandbox
// knows (builtins.go), so the environment ($ENV, env), other inputs
// (input, inputs), debug output (debug, stderr), input metadata, module
// imports and gojq's internal functions (names starting with "_") are
// refused as argument errors, and every step that could be large goes
// through the guard (guard.go, prelude.go). A query holds at most its
// memory bound, counted as its own on its meter: the body while it is
// read, the document as it is decoded (decode.go), then what the filter
// produces (guard.go); never the process's heap, which other queries
// share. It is stopped with view_failed/limit_exceeded when the body is
// over the size limit or the meter over the memory bound, when it runs
// longer than its time limit, when a guard refuses a step, or when it
// yields more than maxQueryResults results. Each result is encoded with a
// cap of the budget, so a huge result costs no more than the budget to
// refuse.
const maxQueryResults = 1 << 20

// Filter is a jq filter parsed, checked and rewritten onto the guarded
// prelude, ready to run over a body (NewQuery).
type Filter struct {
	code  *gojq.Code
	guard *guard
}

// CompileFilter parses, checks and rewrites filter; memory is the query's
// memory bound (QueryLimits.Memory). The error never repeats the filter.
func CompileFilter(filter string, memory int64) (*Filter, error) {
	g := newGuard(memory)
	q, err := gojq.Parse(filter)
	if err != nil {
		return nil, errors.New("the filter is not valid jq syntax")
	}
	w := &rewriter{format: map[*gojq.String]string{}}
	if err := w.walk(reflect.ValueOf(q)); err != nil {
		return nil, err
	}
	prelude, err := gojq.Parse(queryPrelude)
	if err != nil {
		panic(err) // a constant that parses; the tests run it
	}
	q.FuncDefs = append(prelude.FuncDefs, q.FuncDefs...)
	code, err := gojq.Compile(q, append(g.options(),
		gojq.WithEnvironLoader(func() []string { return nil }))...)
	if err != nil {
		return nil, errUnknownFunc
	}
	return &Filter{code: code, guard: g}, nil
}

// NewQuery returns the scanner of the query view: f's results over a body
// of size bytes as compact JSON, one per line, from the result skip+1 while
// the answer fits budget bytes, within lim. A Filter runs once.
func NewQuery(f *Filter, skip, budget, size int64, lim QueryLimits) Scanner {
	q := &queryScan{code: f.code, guard: f.guard, skip: skip, limits: lim,
		page: pager{budget: budget, noun: "results"}}
	// the body is held while it is read: charged first
	if size <= lim.MaxBytes && f.guard.charge(size) {
		q.body = make([]byte, 0, size)
	} else {
		q.tooLarge = true
	}
	return q
}

// QueryLimits bound a query's run.
type QueryLimits struct {
	// MaxBytes is the largest body a query parses.
	MaxBytes int64
	// Timeout is the time limit of one run.
	Timeout time.Duration
	// Memory bounds what one query holds, counted as its own: its body,
	// its decoded document and what its filter produces.
	Memory int64
}

// queryScan keeps the body (at most the query size limit) and runs the
// filter once it verified.
type queryScan struct {
	code     *gojq.Code
	guard    *guard
	skip     int64
	limits   QueryLimits
	page     pager
	body     []byte
	tooLarge bool
}

// Scan implements Scanner.
func (q *queryScan) Scan(_ int64, b []byte) error {
	if !q.tooLarge {
		q.body = append(q.body, b...)
	}
	return nil
}

func failed(r Failure) Answer { return Answer{Outcome: Failed, Failure: r} }

// Answer implements Scanner.
func (q *queryScan) Answer(ctx context.Context, _ int64) Answer {
	if q.tooLarge {
		return failed(LimitExceeded)
	}
	inputs, err := decodeValues(q.body, &q.guard.meter)
	q.guard.used -= int64(cap(q.body)) // the body is dropped; its values are charged
	q.body = nil
	switch {
	case errors.Is(err, errOverMeter):
		return failed(LimitExceeded)
	case err != nil:
		return failed(NotJSON)
	}
	q.guard.held = q.guard.used
	return q.run(ctx, inputs)
}

// run runs the filter over the documents within the query's bounds.
func (q *queryScan) run(ctx context.Context, inputs []any) Answer {
	base, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	run, cancel := context.WithTimeoutCause(base, q.limits.Timeout, errQueryLimit)
	defer cancel()
	q.guard.ctx, q.guard.cancel = run, stopRun
	var enc []byte
	for _, in := range inputs {
		it := q.code.RunWithContext(run, in)
		for {
			v, ok := it.Next()
			if !ok {
				break
			}
			if _, isErr := v.(error); isErr {
				if run.Err() != nil || q.guard.tripped {
					return failed(LimitExceeded)
				}
				return failed(FilterError)
			}
			q.guard.newResult()
			q.page.total++
			if q.page.total > maxQueryResults {
				return failed(LimitExceeded)
			}
			if q.page.total <= q.skip || q.page.full {
				continue
			}
			var err error
			enc, err = appendJSON(enc[:0], v, int(q.page.budget))
			if errors.Is(err, errGuard) {
				return failed(LimitExceeded)
			}
			if err != nil {
				q.page.tooLarge(int(q.page.budget) + 1)
				continue
			}
			enc = append(enc, '\n')
			q.page.offer(enc)
		}
		if run.Err() != nil {
			return failed(LimitExceeded)
		}
	}
	return q.page.answer(q.skip)
}

var errQueryLimit = errors.New("query limit")

// errUnknownFunc refuses a filter that calls a function it does not
// define and the sandbox does not allow, or that gojq cannot compile.
var errUnknownFunc = errors.New("the filter does not compile (unknown function or variable?)")

// errOverBudget is appendJSON's refusal of a result larger than its limit.
var errOverBudget = errors.New("result over the budget")

// appendJSON appends v as compact JSON (object keys sorted, as gojq
// prints them) and fails with errOverBudget as soon as more than limit
// bytes were written, so a huge value costs at most limit bytes to refuse,
// or with errGuard when v is deeper than guardDepth, so the recursion
// stays shallow.
func appendJSON(dst []byte, v any, limit int) ([]byte, error) {
	start := len(dst)
	dst, err := appendValue(dst, v, start+limit, 0)
	if err == nil && len(dst)-start > limit {
		err = errOverBudget
	}
	return dst, err
}

func appendValue(dst []byte, v any, end, depth int) ([]byte, error) {
	if len(dst) > end {
		return dst, errOverBudget
	}
	if depth > guardDepth {
		return dst, errGuard
	}
	var err error
	switch x := v.(type) {
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendValue(dst, e, end, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendValue(dst, k, end, depth+1); err != nil {
				return dst, err
			}
			dst = append(dst, ':')
			if dst, err = appendValue(dst, x[k], end, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case string:
		if len(x) > end-len(dst) {
			return dst, errOverBudget
		}
	}
	b, err := gojq.Marshal(v)
	if err != nil {
		return dst, errOverBudget
	}
	return append(dst, b...), nil
}

// hasDigitRun reports whether b holds n digits in a row: only then can a
// document hold a number normalizeNumbers would change.
func hasDigitRun(b []byte, n int) bool {
	run := 0
	for _, c := range b {
		if c >= '0' && c <= '9' {
			if run++; run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}
