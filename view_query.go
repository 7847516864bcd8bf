package hybridctx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hybridctx/hybridctx/internal/viewengine"
	"github.com/itchyny/gojq"
)

// The query sandbox. A filter is parsed, checked and rewritten before it
// runs (view_query_sandbox.go): the environment ($ENV, env), other inputs
// (input, inputs), debug output (debug, stderr), input metadata, module
// imports and gojq's internal functions (names starting with "_") are
// refused as argument errors, and every step that could be large goes
// through the guard (view_query_guard.go, view_query_prelude.go). At run
// time a query is stopped with view_failed/limit_exceeded when it runs
// longer than its time limit, when the heap grows by more than a third of
// its memory bound (sampled every memorySampleEvery; a third, so that the
// step in flight cannot carry it over the bound), when a guard refuses a
// step, or when it yields more than maxQueryResults results. Each result
// is encoded with a cap of the budget, so a huge result costs no more than
// the budget to refuse.
const (
	maxQueryResults   = 1 << 20
	memorySampleEvery = 2 * time.Millisecond
)

// Validate reports whether r is usable, parsing and checking its filter;
// the error wraps ErrInvalidRequest and never repeats the filter.
func (r QueryRequest) Validate() error {
	_, err := r.compile(newGuard(DefaultQueryMemoryBytes))
	return err
}

func (r QueryRequest) compile(g *guard) (*gojq.Code, error) {
	switch {
	case r.Budget <= 0 || r.Skip < 0:
		return nil, fmt.Errorf("%w: budget must be > 0, skip >= 0", ErrInvalidRequest)
	case strings.TrimSpace(r.Filter) == "":
		return nil, fmt.Errorf("%w: the filter is empty", ErrInvalidRequest)
	case len(r.Filter) > MaxFilterBytes:
		return nil, fmt.Errorf("%w: the filter is longer than %d bytes", ErrInvalidRequest, MaxFilterBytes)
	}
	q, err := gojq.Parse(r.Filter)
	if err != nil {
		return nil, fmt.Errorf("%w: the filter is not valid jq syntax", ErrInvalidRequest)
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
		return nil, fmt.Errorf("%w: the filter does not compile (unknown function or variable?)", ErrInvalidRequest)
	}
	return code, nil
}

// Query resolves req with the query view (docs/rehydration.md): the checks of Rehydrate in
// the same order, then the filter's results as compact JSON, one per line,
// paged with skip and ended by a summary line, the whole answer at most the
// budget. The body is held parsed while the filter runs; a body larger than
// the query size limit is view_failed/limit_exceeded.
func (h *Rehydrator) Query(ctx context.Context, req QueryRequest) (*Rehydration, error) {
	g := newGuard(h.query.memory)
	code, err := req.compile(g)
	if err != nil {
		return nil, err
	}
	return h.runView(ctx, ViewQuery, req.Reference, req.Budget, func(size int64) viewengine.Scanner {
		q := &queryScan{code: code, guard: g, skip: req.Skip, limits: h.query,
			page: pager{budget: req.Budget, noun: "results"}}
		if size <= h.query.maxBytes {
			q.body = make([]byte, 0, size)
		} else {
			q.tooLarge = true
		}
		return engineAnswer{q}
	})
}

// queryLimits are a Rehydrator's query bounds.
type queryLimits struct {
	maxBytes int64
	timeout  time.Duration
	memory   int64
}

// queryScan keeps the body (at most the query size limit) and runs the
// filter once it verified.
type queryScan struct {
	code     *gojq.Code
	guard    *guard
	skip     int64
	limits   queryLimits
	page     pager
	body     []byte
	tooLarge bool
}

func (q *queryScan) scan(_ int64, b []byte) error {
	if !q.tooLarge {
		q.body = append(q.body, b...)
	}
	return nil
}

func failed(r Reason) viewAnswer { return viewAnswer{outcome: ViewFailed, reason: r} }

func (q *queryScan) answer(ctx context.Context, _ int64) viewAnswer {
	if q.tooLarge {
		return failed(LimitExceeded)
	}
	inputs, ok := decodeJSON(q.body)
	if ok && hasDigitRun(q.body, guardDigits+1) {
		normalizeNumbers(inputs)
	}
	q.body = nil
	if !ok {
		return failed(NotJSON)
	}
	return q.run(ctx, inputs)
}

// run runs the filter over the documents within the query's bounds.
func (q *queryScan) run(ctx context.Context, inputs []any) viewAnswer {
	base, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	run, cancel := context.WithTimeoutCause(base, q.limits.timeout, errQueryLimit)
	defer cancel()
	q.guard.cancel = stopRun
	stop := watchHeap(run, q.limits.memory/3, func() { stopRun(errQueryLimit) })
	defer stop()
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

// decodeJSON parses a body of one or more JSON values (separated by white
// space, as jq reads its input), keeping numbers exact.
func decodeJSON(b []byte) ([]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []any
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return out, len(out) > 0
		}
		if err != nil {
			return nil, false
		}
		out = append(out, v)
	}
}

// watchHeap cancels a query whose heap use grows by more than limit,
// sampling every memorySampleEvery; stop ends the watch.
func watchHeap(ctx context.Context, limit int64, cancel func()) (stop func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() int64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(sample[0].Value.Uint64())
	}
	base := read()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(memorySampleEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if read()-base > limit {
					cancel()
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

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

// normalizeNumbers reads a number of more than guardDigits digits in the
// documents as a float, as jq does, so that no step parses a huge integer
// (gojq would, on every arithmetic use, in quadratic time). It walks
// without recursion; its stack holds the containers still to visit.
func normalizeNumbers(docs []any) {
	stack := []any{docs}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				x[i] = normalizeNumber(e, &stack)
			}
		case map[string]any:
			for k, e := range x {
				x[k] = normalizeNumber(e, &stack)
			}
		}
	}
}

func normalizeNumber(v any, stack *[]any) any {
	switch x := v.(type) {
	case json.Number:
		if len(x) > guardDigits {
			f, _ := strconv.ParseFloat(string(x), 64)
			return f
		}
	case []any, map[string]any:
		*stack = append(*stack, v)
	}
	return v
}
