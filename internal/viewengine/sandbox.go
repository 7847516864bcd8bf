package viewengine

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
)

// forbiddenFuncs names the built-ins (any arity) and variables a filter
// may not use, and why; every other built-in not in allowedBuiltins
// (builtins.go) is refused too, as unknown to the sandbox.
var forbiddenFuncs = map[string]string{
	"env": "the environment", "$ENV": "the environment",
	"input": "other inputs", "inputs": "other inputs",
	"debug": "debug output", "stderr": "debug output",
	"input_filename": "input metadata", "input_line_number": "input metadata",
	"$__prog_args": "program arguments", "get_search_list": "modules", "modulemeta": "modules",
}

// guardedOps routes an operator to its prelude definition.
var guardedOps = map[gojq.Operator]string{
	gojq.OpAdd: "_hx_plus", gojq.OpSub: "_hx_minus", gojq.OpMul: "_hx_mul", gojq.OpDiv: "_hx_div",
	gojq.OpEq: "_hx_eq", gojq.OpNe: "_hx_ne", gojq.OpLt: "_hx_lt", gojq.OpLe: "_hx_le",
	gojq.OpGt: "_hx_gt", gojq.OpGe: "_hx_ge",
}

// formatFuncs names the function gojq applies for a format (the prelude
// guards each); another format goes through format/1.
var formatFuncs = map[string]string{
	"@text": "_hx_tostring", "@json": "_hx_tojson", "@html": "_tohtml", "@uri": "_touri", "@urid": "_tourid",
	"@csv": "_tocsv", "@tsv": "_totsv", "@sh": "_tosh", "@base64": "_tobase64", "@base64d": "_tobase64d",
}

// rewriter checks a parsed filter and rewrites it onto the guarded
// prelude: it refuses what reaches outside the document, routes operators,
// path assignments, computed indexes and string interpolation through the
// guard, and leaves everything else to gojq. It visits children before
// rewriting a node, so the nodes it creates are never visited again.
type rewriter struct {
	format map[*gojq.String]string // the format of an interpolated string
	scope  []scopeEntry            // the functions and parameters visible
	marks  []int                   // len(scope) where each open query or definition began
	defs   int                     // the filter's definitions enclosing the node
}

func funcKey(name string, arity int) string { return name + "/" + strconv.Itoa(arity) }

// visible reports whether name/arity here is a function the filter
// defines or a parameter it binds.
func (w *rewriter) visible(name string, arity int) bool {
	key := funcKey(name, arity)
	for _, e := range w.scope {
		if e.key == key {
			return true
		}
	}
	return false
}

// ownFunc reports whether a call of name/arity here is of a function the
// filter defines.
func (w *rewriter) ownFunc(name string, arity int) bool {
	key := funcKey(name, arity)
	for i := len(w.scope) - 1; i >= 0; i-- {
		if w.scope[i].key == key {
			return w.scope[i].own
		}
	}
	return false
}

func (w *rewriter) mark() { w.marks = append(w.marks, len(w.scope)) }
func (w *rewriter) unmark() {
	w.scope, w.marks = w.scope[:w.marks[len(w.marks)-1]], w.marks[:len(w.marks)-1]
}

// The charging calls the rewrite places: after each value an array
// constructor collects, after each object constructed (guard.go). And
// the depth of a filter's own functions: each gets one more parameter,
// its call depth (depthParam), which each call site passes on plus one
// and the start of its body checks (depthFunc): a recursion of the
// filter's functions grows the interpreter's stack, which no value shows.
const (
	slotFunc   = "_hx_slot"
	objectFunc = "_hx_object"
	depthFunc  = "_hx_depth"
	depthParam = "$_hx_d"
	// costCall is what one level of a filter's own recursion holds on the
	// interpreter's stack, about (measured by TestQueryMemory).
	costCall = 1024
)

// scopeEntry is a function name/arity a filter defines, or a parameter
// it binds, visible where the rewrite is.
type scopeEntry struct {
	key string
	own bool // a function the filter defines (not a parameter)
}

func pipe(l, r *gojq.Query) *gojq.Query {
	return &gojq.Query{Left: l, Op: gojq.OpPipe, Right: r}
}

func call(name string, args ...*gojq.Query) *gojq.Query {
	return &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: name, Args: args}}}
}

func (w *rewriter) walk(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		if err := w.before(v.Interface()); err != nil {
			return err
		}
		if err := w.walk(v.Elem()); err != nil {
			return err
		}
		w.after(v.Interface())
	case reflect.Struct:
		for i := range v.NumField() {
			if err := w.walk(v.Field(i)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := w.walk(v.Index(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// before refuses what a filter may not do, and notes the format of an
// interpolated string before its pieces are visited.
func (w *rewriter) before(n any) error {
	switch n := n.(type) {
	case *gojq.Query:
		w.mark()
		if len(n.Imports) > 0 {
			return errors.New("modules (import, include) are not available in a filter")
		}
		if n.Op == gojq.OpUpdateMul {
			return errors.New("*= is not available in a filter; write |= . * x")
		}
	case *gojq.Func:
		if what, bad := forbiddenFuncs[n.Name]; bad {
			return fmt.Errorf("%s is not available to a filter", what)
		}
		switch {
		case strings.HasPrefix(n.Name, "$__"):
			return errors.New("internal variables are not available to a filter")
		case strings.HasPrefix(n.Name, "$"): // a variable
		case strings.HasPrefix(n.Name, "_"):
			return errors.New("internal functions are not available to a filter")
		case !w.visible(n.Name, len(n.Args)) && !allowedBuiltins[funcKey(n.Name, len(n.Args))]:
			// the filter's own functions and parameters, then the
			// allow-list: a built-in the sandbox does not know never runs
			return errUnknownFunc
		}
	case *gojq.FuncDef:
		if strings.HasPrefix(n.Name, "_") {
			return errors.New("internal functions are not available to a filter")
		}
		// visible in its own body and after it, until its query ends
		w.scope = append(w.scope, scopeEntry{key: funcKey(n.Name, len(n.Args)), own: true})
		w.mark()
		w.defs++
		for _, a := range n.Args {
			if strings.HasPrefix(strings.TrimPrefix(a, "$"), "_") {
				return errors.New("internal names are not available to a filter")
			}
			w.scope = append(w.scope, scopeEntry{key: funcKey(strings.TrimPrefix(a, "$"), 0)})
		}
	case *gojq.Term:
		if n.Type == gojq.TermTypeFormat && n.Str != nil {
			w.format[n.Str] = n.Format
		}
	}
	return nil
}

// after rewrites a node whose children are done.
func (w *rewriter) after(n any) {
	switch n := n.(type) {
	case *gojq.Query:
		w.unmark()
		if name, ok := guardedOps[n.Op]; ok {
			*n = *call(name, n.Left, n.Right)
		}
		switch n.Op {
		case gojq.OpAssign, gojq.OpModify, gojq.OpUpdateAdd, gojq.OpUpdateSub,
			gojq.OpUpdateDiv, gojq.OpUpdateMod, gojq.OpUpdateAlt:
			if !plainPath(n.Left) {
				n.Left = call("_hx_paths", n.Left)
			}
		}
	case *gojq.Term:
		switch {
		case n.Type == gojq.TermTypeFormat && n.Str != nil:
			n.Type, n.Format = gojq.TermTypeString, ""
		case n.Type == gojq.TermTypeArray && n.Array != nil && n.Array.Query != nil:
			n.Array.Query = pipe(n.Array.Query, call(slotFunc))
		case n.Type == gojq.TermTypeObject:
			obj := &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeObject, Object: n.Object}}
			*n = gojq.Term{Type: gojq.TermTypeQuery, Query: pipe(obj, call(objectFunc)), SuffixList: n.SuffixList}
		}
	case *gojq.FuncDef:
		w.unmark()
		w.defs--
		n.Args = append(n.Args, depthParam)
		n.Body = pipe(call(depthFunc, call(depthParam)), n.Body)
	case *gojq.Func:
		if !strings.HasPrefix(n.Name, "$") && w.ownFunc(n.Name, len(n.Args)) {
			depth := &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeNumber, Number: "0"}}
			if w.defs > 0 {
				depth = &gojq.Query{Left: call(depthParam), Op: gojq.OpAdd,
					Right: &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeNumber, Number: "1"}}}
			}
			n.Args = append(n.Args, depth)
		}
	case *gojq.Index:
		if !n.IsSlice && n.Start != nil && !constantKey(n.Start) {
			n.Start = call("_hx_key", n.Start)
		}
	case *gojq.PatternObject:
		if n.KeyQuery != nil {
			n.KeyQuery = call("_hx_key", n.KeyQuery)
		}
	case *gojq.String:
		w.interpolate(n)
	}
}

// plainPath reports a path expression made only of constant keys and
// small constant indexes (|n| <= 1024), iterations, pipes and commas: its
// paths are at most as long as the filter and create at most a few
// thousand array slots, so the update needs no guard (and gojq keeps its
// fast in-place update).
func plainPath(q *gojq.Query) bool {
	switch {
	case q == nil || len(q.FuncDefs) > 0 || q.Patterns != nil:
		return false
	case q.Op == gojq.OpPipe || q.Op == gojq.OpComma:
		return plainPath(q.Left) && plainPath(q.Right)
	case q.Op != 0 || q.Term == nil:
		return false
	}
	t := q.Term
	switch t.Type {
	case gojq.TermTypeIdentity:
	case gojq.TermTypeIndex:
		if !plainIndex(t.Index) {
			return false
		}
	case gojq.TermTypeQuery:
		if !plainPath(t.Query) {
			return false
		}
	default:
		return false
	}
	for _, s := range t.SuffixList {
		if s.Index != nil && !plainIndex(s.Index) {
			return false
		}
	}
	return true
}

func plainIndex(x *gojq.Index) bool {
	if x.Str != nil && x.Str.Queries != nil {
		return false
	}
	for _, q := range []*gojq.Query{x.Start, x.End} {
		if q == nil {
			continue
		}
		if !constantKey(q) {
			return false
		}
		if q.Term.Type == gojq.TermTypeNumber {
			if f, err := strconv.ParseFloat(q.Term.Number, 64); err != nil || math.Abs(f) > 1024 {
				return false
			}
		}
	}
	return true
}

// constantKey reports a literal number or string index, which cannot be
// an array.
func constantKey(q *gojq.Query) bool {
	if q.Term == nil || q.Op != 0 || len(q.Term.SuffixList) > 0 {
		return false
	}
	return q.Term.Type == gojq.TermTypeNumber || q.Term.Type == gojq.TermTypeString && q.Term.Str != nil && q.Term.Str.Queries == nil
}

// interpolate replaces the pieces of an interpolated string by one query
// that formats each piece with the guarded function and joins them with
// the guarded +, as gojq would join them with its own (which no guard
// sees): the string is then that query's value.
func (w *rewriter) interpolate(s *gojq.String) {
	if s.Queries == nil {
		return
	}
	f := "_hx_tostring"
	if format, ok := w.format[s]; ok {
		if f, ok = formatFuncs[format]; !ok {
			f = ""
		}
		if f == "" {
			f = "format"
		}
	}
	var q *gojq.Query
	for _, e := range s.Queries {
		if e.Term == nil || e.Term.Str == nil {
			fn := call(f)
			if f == "format" {
				fn = call("format", &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeString,
					Str: &gojq.String{Str: strings.TrimPrefix(w.format[s], "@")}}})
			}
			e = &gojq.Query{Left: e, Op: gojq.OpPipe, Right: fn}
		}
		if q == nil {
			q = e
		} else {
			q = call("_hx_plus", q, e)
		}
	}
	s.Queries = []*gojq.Query{{Term: &gojq.Term{Type: gojq.TermTypeQuery, Query: q}}}
}
