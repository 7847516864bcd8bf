package viewengine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/itchyny/gojq"
)

// The guard of the query sandbox. gojq runs a filter as a sequence of steps
// and checks its context between steps, so the time limit acts only
// between steps; and several of its built-in functions
// recurse over a value on the Go stack, where a value a million levels deep
// is a fatal stack overflow that no recover can catch. Running the filter in
// another process would survive that, but a library cannot start itself as
// a child. So no step is allowed to be large: every built-in function or
// operator that walks a value, or allocates in proportion to a number or a
// size it is given, is replaced (see sandbox.go) by a definition
// that first calls the guard, which measures the arguments without
// recursion and refuses what would exceed these bounds:
//
//   - depth: no recursive built-in ever sees a value deeper than
//     guardDepth (the JSON decoder's own nesting limit, so every stored
//     document passes); the Go stack of one step stays a few megabytes;
//   - size: a walked value has at most guardNodes values (counting a shared
//     value each time it occurs, so a value built by repetition counts at
//     its printed size), a sorted one at most guardSort; a pairwise walk
//     (contains, inside, indices, array subtraction) at most guardWork
//     pairs;
//   - output: a string, array or object a step produces is at most out
//     bytes, estimated before it is produced (an eighth of the memory
//     bound); an array index a path assignment creates is bounded likewise;
//   - numbers: big integers at most guardBits bits, number text at most
//     guardDigits digits (longer numbers in a document are read as floats);
//   - regular expressions: at most MaxPatternBytes, and the match work and
//     the matches of one call bounded.
//
// A refusal cancels the run (so try/catch cannot swallow it): the query
// ends as view_failed/limit_exceeded. With every step bounded, the time
// limit holds to within one step. Memory is the query's own account, not
// the process's heap (other queries run beside it): the guard charges each
// step's estimated output to the query's meter before the step runs (a
// string or array it builds, a map entry a path assignment adds, a slot of
// an array a filter collects, an object it constructs, a call of a function
// the filter defines, for the interpreter's stack), on top of the decoded
// document (decode.go), and refuses the step that would take the meter over
// the query's memory bound. The charges of a run count from its last
// result: what a filter built for a result it yielded is garbage once
// yielded, unless a variable still holds it, which at most doubles what the
// meter lets through.
const (
	guardDepth  = 10000
	guardNodes  = 1 << 22
	guardSort   = 1 << 18
	guardWork   = 1 << 23
	guardBits   = 1 << 16
	guardDigits = 1000
	// guardRegexWork bounds subject bytes × compiled instructions of one
	// regular expression call.
	guardRegexWork = 1 << 26
	// guardMatches bounds the match objects (captures included) of one
	// global match.
	guardMatches = 1 << 16
	checkFunc    = "_hx_check"
	// maxRepeat bounds a string repetition ("x" * n), as it always has.
	maxRepeat = 1 << 20
)

// errGuard is the guard's refusal; the query ends as limit_exceeded.
var errGuard = errors.New("query step over its bound")

// guard holds the bounds of one compiled query, its meter and the run it
// may cancel.
type guard struct {
	meter
	held    int64           // the meter's charge for the decoded document, kept across results
	out     int64           // bytes a step may produce
	ctx     context.Context // the run's: done once it is over its time
	cancel  context.CancelCauseFunc
	tripped bool
	regexps map[string]compiledRegexp
}

func newGuard(memory int64) *guard {
	return &guard{meter: meter{limit: memory}, out: max(memory/8, 1<<16)}
}

// fits reports whether a step that produces n bytes may run: n within out
// and within what the query's meter has left; it charges them.
func (g *guard) fits(n int64) bool {
	return n <= g.out && g.charge(n)
}

// newResult ends the charges of the results before: only the document
// stays charged.
func (g *guard) newResult() { g.used = g.held }

// refuse records the refusal and cancels the run, so that the next step
// ends the query whatever the filter does with the error.
func (g *guard) refuse() any {
	g.tripped = true
	if g.cancel != nil {
		g.cancel(errGuard)
	}
	return errGuard
}

// shape is what measure learned of a value.
type shape struct {
	nodes int64 // values, containers included, shared ones each time
	text  int64 // an upper bound of its JSON text (when asked for)
	depth int
}

// frame is one container being walked: an array by index, an object by
// its iterator, so the walk holds O(depth) memory whatever the widths.
type frame struct {
	arr []any
	i   int
	obj *reflect.MapIter
}

// measure walks v without recursion and reports false as soon as it has
// more than guardNodes values, is deeper than guardDepth, or (when text is
// set) prints to more than textLimit bytes.
func measure(v any, text bool, textLimit int64) (shape, bool) {
	var s shape
	var stack []frame
	visit := func(x any) bool {
		s.nodes++
		if s.nodes > guardNodes {
			return false
		}
		switch x := x.(type) {
		case []any:
			s.text += 2 + int64(len(x))
			if len(x) > 0 {
				stack = append(stack, frame{arr: x})
			}
		case map[string]any:
			s.text += 2 + int64(len(x))
			if len(x) > 0 {
				stack = append(stack, frame{obj: reflect.ValueOf(x).MapRange()})
			}
		default:
			if text {
				s.text += scalarText(x)
			}
		}
		if len(stack) > s.depth {
			s.depth = len(stack)
		}
		return s.depth <= guardDepth && (!text || s.text <= textLimit)
	}
	if !visit(v) {
		return s, false
	}
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		var next any
		switch {
		case f.obj != nil:
			if !f.obj.Next() {
				stack = stack[:len(stack)-1]
				continue
			}
			if text {
				s.text += stringText(f.obj.Key().String()) + 1
			}
			next = f.obj.Value().Interface()
		case f.i < len(f.arr):
			next = f.arr[f.i]
			f.i++
		default:
			stack = stack[:len(stack)-1]
			continue
		}
		if !visit(next) {
			return s, false
		}
	}
	return s, true
}

// scalarText bounds the JSON text of a scalar.
func scalarText(x any) int64 {
	switch x := x.(type) {
	case string:
		return stringText(x)
	case json.Number:
		return int64(len(x))
	case *big.Int:
		return int64(x.BitLen()/3 + 2)
	default:
		return 24
	}
}

// stringText bounds the JSON text of s: an escaped byte takes at most 6
// bytes, a non-ASCII one at most 3 (the replacement character of an
// invalid byte).
func stringText(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c == 0x7f:
			n += 6
		case c >= 0x80:
			n += 3
		default:
			n++
		}
	}
	return n
}

// formatFactor bounds how much a format multiplies the text it is given.
func formatFactor(f any) int64 {
	switch f {
	case "html":
		return 6
	case "sh":
		return 4
	case "uri":
		return 3
	case "csv", "tsv", "base64":
		return 2
	}
	return 1
}

// check is the custom function _hx_check(kind; args...): it returns its
// input unchanged when the step kind may run on args, else refuses.
func (g *guard) check(in any, args []any) any {
	kind, _ := args[0].(string)
	if ok := g.allowed(kind, args[1:]); !ok {
		return g.refuse()
	}
	return in
}

func (g *guard) allowed(kind string, a []any) bool {
	switch kind {
	case "cmp": // compare, sort, flatten, merge: depth and size
		for _, v := range a {
			if !g.walkable(v) {
				return false
			}
		}
		return true
	case "sort": // a sort: n log n comparisons
		for _, v := range a {
			if s, ok := measure(v, false, 0); !ok || s.nodes > guardSort || !g.charge(16*s.nodes) {
				return false
			}
		}
		return true
	case "flatten": // a copy of every array slot
		return g.sized(a[0], 16)
	case "pair": // a pairwise walk
		return g.pair(a[0], a[1])
	case "indices":
		// gojq explodes both strings into arrays of code points, then
		// compares at every position
		if s, ok := a[0].(string); ok {
			sub, _ := a[1].(string)
			return int64(len(s))*int64(max(len(sub), 1)) <= guardWork && g.fits(24*int64(len(s)+len(sub)))
		}
		return g.pair(a[0], a[1])
	case "text": // a step that prints a[1] with format a[0]
		if _, isStr := a[1].(string); isStr && a[0] == "text" {
			return true // tostring of a string is the string itself
		}
		s, ok := measure(a[1], true, g.out)
		return ok && g.fits(s.text*formatFactor(a[0]))
	case "plus":
		return g.plus(a[0], a[1])
	case "minus":
		if x, ok := a[0].([]any); ok {
			if y, ok := a[1].([]any); ok {
				return g.pair(x, y)
			}
		}
		return g.numbers(a[0], a[1], 1)
	case "mul":
		return g.mul(a[0], a[1])
	case "split", "div":
		return g.split(a[0], a[1])
	case "addall":
		return g.addAll(a[0])
	case "join":
		return g.join(a[0], a[1])
	case "explode":
		s, _ := a[0].(string)
		return g.fits(24 * int64(len(s)))
	case "fromjson": // the parsed value, and no number gojq would parse slowly
		s, _ := a[0].(string)
		return !hasDigitRun([]byte(s), guardDigits+1) && g.fits(16*int64(len(s)))
	case "tonumber":
		s, _ := a[0].(string)
		return len(s) <= guardDigits
	case "path":
		return g.path(a[0])
	case "paths":
		ps, ok := a[0].([]any)
		if !ok {
			return true // gojq reports the type error
		}
		for _, p := range ps {
			if !g.path(p) {
				return false
			}
		}
		return g.allowed("sort", a)
	case "getpath":
		p, _ := a[0].([]any)
		for _, x := range p {
			if _, isArr := x.([]any); isArr {
				return false
			}
		}
		return true
	case "key":
		_, isArr := a[0].([]any)
		return !isArr
	case "transpose":
		return g.transpose(a[0])
	case "strftime":
		s, _ := a[0].(string)
		return g.fits(64 * int64(len(s)))
	case "match":
		s, _ := a[0].(string)
		return g.match(a[0], a[1], a[2], a[3]) && g.charge(2*int64(len(s))+256)
	}
	return false
}

// walkable reports whether a recursive built-in may walk v.
func (g *guard) walkable(v any) bool {
	_, ok := measure(v, false, 0)
	return ok
}

// sized reports whether a step that walks v and produces up to per bytes
// for each of its values stays within out.
func (g *guard) sized(v any, per int64) bool {
	s, ok := measure(v, false, 0)
	return ok && g.fits(s.nodes*per)
}

func (g *guard) pair(x, y any) bool {
	a, ok := measure(x, false, 0)
	if !ok {
		return false
	}
	b, ok := measure(y, false, 0)
	return ok && a.nodes*b.nodes <= guardWork
}

// numbers bounds the big integers an arithmetic step may produce: the
// result of + or - has at most one more bit than its operands, of * their
// sum.
func (g *guard) numbers(x, y any, mul int) bool {
	bx, by := bits(x), bits(y)
	if mul > 1 {
		return bx+by <= guardBits
	}
	return max(bx, by) < guardBits
}

// bits is the size of an integer operand, 0 for anything else.
func bits(v any) int {
	switch v := v.(type) {
	case *big.Int:
		return v.BitLen()
	case json.Number:
		return len(v) * 4
	case int:
		return 64
	}
	return 0
}

func (g *guard) plus(x, y any) bool {
	var a, b, per int64
	switch x := x.(type) {
	case string:
		y, ok := y.(string)
		if !ok {
			return g.numbers(x, y, 1)
		}
		a, b, per = int64(len(x)), int64(len(y)), 1
	case []any:
		y, ok := y.([]any)
		if !ok {
			return g.numbers(x, y, 1)
		}
		a, b, per = int64(len(x)), int64(len(y)), 16
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok {
			return g.numbers(x, y, 1)
		}
		a, b, per = int64(len(x)), int64(len(y)), 64
	default:
		return g.numbers(x, y, 1)
	}
	// charged: what the result adds to the larger operand, which an
	// accumulator (reduce ... (. + $x)) drops as it grows
	return per*(a+b) <= g.out && g.charge(per*min(a, b))
}

func (g *guard) mul(x, y any) bool {
	if s, ok := x.(string); ok {
		return g.repeat(s, y)
	}
	if s, ok := y.(string); ok {
		return g.repeat(s, x)
	}
	if _, ok := x.(map[string]any); ok {
		// a deep merge copies the objects it merges
		return g.sized(x, 64) && g.sized(y, 64)
	}
	return g.numbers(x, y, 2)
}

func (g *guard) repeat(s string, n any) bool {
	f, ok := gojq.ToFloat64(n)
	if !ok || math.IsNaN(f) || f <= 0 {
		return true
	}
	size := float64(len(s)) * math.Ceil(f)
	return size <= float64(min(g.out, maxRepeat)) && g.fits(int64(size))
}

// split bounds string / string and split/1: the pieces cost a string
// header and a slot each.
func (g *guard) split(x, y any) bool {
	s, ok := x.(string)
	sep, ok2 := y.(string)
	if !ok || !ok2 {
		return g.numbers(x, y, 1)
	}
	pieces := int64(utf8.RuneCountInString(s)) + 1
	if sep != "" {
		pieces = int64(strings.Count(s, sep)) + 1
	}
	return g.fits(32*pieces + int64(len(s)))
}

func (g *guard) addAll(v any) bool {
	vs, ok := v.([]any)
	if !ok {
		if m, isObj := v.(map[string]any); isObj {
			vs = make([]any, 0, len(m))
			for _, x := range m {
				vs = append(vs, x)
			}
		}
	}
	var size int64
	for _, x := range vs {
		switch x := x.(type) {
		case string:
			size += int64(len(x))
		case []any:
			size += 16 * int64(len(x))
		case map[string]any:
			size += 64 * int64(len(x))
		default:
			if bits(x) >= guardBits {
				return false
			}
		}
		if size > g.out {
			return false
		}
	}
	return true
}

func (g *guard) join(v, sep any) bool {
	vs, _ := v.([]any)
	s, _ := sep.(string)
	size := int64(len(vs)) * int64(len(s))
	for _, x := range vs {
		if size > g.out {
			return false
		}
		size += scalarText(x)
	}
	return g.fits(size)
}

// path bounds a path a step assigns to: at most guardDepth long (the
// update recurses along it), no array keys (an array index is a search),
// and the array slots it may create, summed over its indices, within out.
func (g *guard) path(p any) bool {
	ps, ok := p.([]any)
	if !ok {
		return true
	}
	if len(ps) > guardDepth {
		return false
	}
	var slots float64
	add := func(x any) {
		if f, ok := gojq.ToFloat64(x); ok && f > 0 {
			slots += f
		} else if ok && math.IsNaN(f) {
			slots = math.Inf(1)
		}
	}
	for _, x := range ps {
		switch x := x.(type) {
		case []any:
			return false
		case map[string]any:
			add(x["start"])
			add(x["end"])
		default:
			add(x)
		}
	}
	return 16*slots <= float64(g.out) && g.fits(int64(16*slots)+costEntry)
}

func (g *guard) transpose(v any) bool {
	vs, _ := v.([]any)
	var longest int64
	for _, x := range vs {
		if r, ok := x.([]any); ok {
			longest = max(longest, int64(len(r)))
		}
	}
	return g.fits(longest * (16*int64(len(vs)) + 48))
}
