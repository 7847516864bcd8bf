package hybridctx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"runtime/metrics"
	"sort"
	"strings"
	"time"

	"github.com/itchyny/gojq"
)

// The query sandbox. A filter is parsed, checked and rewritten before it
// runs: the environment ($ENV, env), other inputs (input, inputs), debug
// output (debug, stderr), input metadata, module imports and gojq's
// internal functions (names starting with "_") are refused as argument
// errors; string repetition ("x" * n) goes through a guard that refuses
// results over maxQueryString. At run time a query is stopped with
// view_failed/limit_exceeded when it runs longer than its time limit, when
// the heap grows by more than its memory bound (sampled every
// memorySampleEvery), or when it yields more than maxQueryResults results.
// Each result is encoded with a cap of the budget, so a huge result costs
// no more than the budget to refuse.
const (
	maxQueryString    = 1 << 20
	maxQueryResults   = 1 << 20
	memorySampleEvery = 2 * time.Millisecond
	mulGuard          = "_hybridctx_multiply"
)

var forbiddenFuncs = map[string]string{
	"env": "the environment", "$ENV": "the environment",
	"input": "other inputs", "inputs": "other inputs",
	"debug": "debug output", "stderr": "debug output",
	"input_filename": "input metadata", "input_line_number": "input metadata",
	"$__prog_args": "program arguments", "get_search_list": "modules",
}

// Validate reports whether r is usable, parsing and checking its filter;
// the error wraps ErrInvalidRequest and never repeats the filter.
func (r QueryRequest) Validate() error {
	_, err := r.compile()
	return err
}

func (r QueryRequest) compile() (*gojq.Code, error) {
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
	if err := sandbox(reflect.ValueOf(q)); err != nil {
		return nil, err
	}
	code, err := gojq.Compile(q,
		gojq.WithEnvironLoader(func() []string { return nil }),
		gojq.WithFunction(mulGuard, 2, 2, guardedMultiply))
	if err != nil {
		return nil, fmt.Errorf("%w: the filter does not compile (unknown function or variable?)", ErrInvalidRequest)
	}
	return code, nil
}

// sandbox walks the parsed filter: it refuses what reaches outside the
// document and routes multiplication through the guard.
func sandbox(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		switch n := v.Interface().(type) {
		case *gojq.Query:
			if len(n.Imports) > 0 {
				return fmt.Errorf("%w: modules (import, include) are not available in a filter", ErrInvalidRequest)
			}
			switch n.Op {
			case gojq.OpMul:
				*n = gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc,
					Func: &gojq.Func{Name: mulGuard, Args: []*gojq.Query{n.Left, n.Right}}}}
			case gojq.OpUpdateMul:
				return fmt.Errorf("%w: *= is not available in a filter; write |= . * x", ErrInvalidRequest)
			}
		case *gojq.Func:
			if what, bad := forbiddenFuncs[n.Name]; bad {
				return fmt.Errorf("%w: %s is not available to a filter", ErrInvalidRequest, what)
			}
			if strings.HasPrefix(n.Name, "_") && n.Name != mulGuard {
				return fmt.Errorf("%w: internal functions are not available to a filter", ErrInvalidRequest)
			}
		}
		return sandbox(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if err := sandbox(v.Field(i)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := sandbox(v.Index(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

var mulCode = func() *gojq.Code {
	q, err := gojq.Parse(".[0] * .[1]")
	if err != nil {
		panic(err)
	}
	c, err := gojq.Compile(q)
	if err != nil {
		panic(err)
	}
	return c
}()

// errStringTooLarge is the guard's refusal of a huge string repetition.
var errStringTooLarge = errors.New("string repetition too large")

// guardedMultiply is jq's "*" with string repetition bounded.
func guardedMultiply(_ any, args []any) any {
	l, r := args[0], args[1]
	s, sok := l.(string)
	n, nok := r, true
	if !sok {
		s, sok = r.(string)
		n = l
	}
	if sok {
		var f float64
		switch x := n.(type) {
		case int:
			f = float64(x)
		case float64:
			f = x
		case json.Number:
			f, _ = x.Float64()
		default:
			nok = false
		}
		if nok && f > 0 && float64(len(s))*math.Floor(f) > maxQueryString {
			return errStringTooLarge
		}
	}
	v, _ := mulCode.Run([]any{l, r}).Next()
	return v
}

// Query resolves req with the query view (docs/rehydration.md): the checks of Rehydrate in
// the same order, then the filter's results as compact JSON, one per line,
// paged with skip and ended by a summary line, the whole answer at most the
// budget. The body is held parsed while the filter runs; a body larger than
// the query size limit is view_failed/limit_exceeded.
func (h *Rehydrator) Query(ctx context.Context, req QueryRequest) (*Rehydration, error) {
	code, err := req.compile()
	if err != nil {
		return nil, err
	}
	return h.runView(ctx, ViewQuery, req.Reference, req.Budget, func(size int64) viewScanner {
		q := &queryScan{code: code, skip: req.Skip, limits: h.query,
			page: pager{budget: req.Budget, noun: "results"}}
		if size <= h.query.maxBytes {
			q.body = make([]byte, 0, size)
		} else {
			q.tooLarge = true
		}
		return q
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
	q.body = nil
	if !ok {
		return failed(NotJSON)
	}
	run, cancel := context.WithTimeoutCause(ctx, q.limits.timeout, errQueryLimit)
	defer cancel()
	stop := watchHeap(run, q.limits.memory, cancel)
	defer stop()
	var enc []byte
	for _, in := range inputs {
		it := q.code.RunWithContext(run, in)
		for {
			v, ok := it.Next()
			if !ok {
				break
			}
			if err, isErr := v.(error); isErr {
				if run.Err() != nil || errors.Is(err, errStringTooLarge) {
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
			var fits bool
			enc, fits = appendJSON(enc[:0], v, int(q.page.budget))
			if !fits {
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
func watchHeap(ctx context.Context, limit int64, cancel context.CancelFunc) (stop func()) {
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

// appendJSON appends v as compact JSON (object keys sorted, as gojq
// prints them) and reports false as soon as more than limit bytes were
// written, so a huge value costs at most limit bytes to refuse.
func appendJSON(dst []byte, v any, limit int) ([]byte, bool) {
	start := len(dst)
	var ok bool
	dst, ok = appendValue(dst, v, start+limit)
	return dst, ok && len(dst)-start <= limit
}

func appendValue(dst []byte, v any, end int) ([]byte, bool) {
	if len(dst) > end {
		return dst, false
	}
	switch x := v.(type) {
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendValue(dst, e, end); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), len(dst) < end
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
			var ok bool
			if dst, ok = appendValue(dst, k, end); !ok {
				return dst, false
			}
			dst = append(dst, ':')
			if dst, ok = appendValue(dst, x[k], end); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), len(dst) < end
	case string:
		if len(x) > end-len(dst) {
			return dst, false
		}
	}
	b, err := gojq.Marshal(v)
	if err != nil {
		return dst, false
	}
	dst = append(dst, b...)
	return dst, len(dst) <= end
}
