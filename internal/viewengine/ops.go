package viewengine

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/itchyny/gojq"
)

// The guarded operators. The rewrite of a filter (sandbox.go)
// turns each of + - * / == != < <= > >= into a call of one of these custom
// functions; gojq evaluates a custom function's arguments exactly as it
// evaluates an operator's (the right operand outermost), so the order of
// results is unchanged. Each guards its operands (guard.go),
// computes the common cases of numbers and strings itself, as gojq does,
// and leaves every other case to gojq's own operator.

// guardedOp is one operator: its guard kind, its own computation of the
// common cases (false: not one of them), and the operator for the rest.
type guardedOp struct {
	kind string
	fast func(l, r any) (any, bool)
	slow func(l, r any) any
}

var guardedOpFuncs = map[string]guardedOp{
	"_hx_plus":  {"plus", fastPlus, opCode("+")},
	"_hx_minus": {"minus", fastArith('-'), opCode("-")},
	"_hx_mul":   {"mul", fastArith('*'), opCode("*")},
	"_hx_div":   {"div", fastArith('/'), opCode("/")},
	"_hx_eq":    compareOp(func(c int) bool { return c == 0 }),
	"_hx_ne":    compareOp(func(c int) bool { return c != 0 }),
	"_hx_lt":    compareOp(func(c int) bool { return c < 0 }),
	"_hx_le":    compareOp(func(c int) bool { return c <= 0 }),
	"_hx_gt":    compareOp(func(c int) bool { return c > 0 }),
	"_hx_ge":    compareOp(func(c int) bool { return c >= 0 }),
}

// opCode is gojq's own operator op.
func opCode(op string) func(l, r any) any {
	q, err := gojq.Parse(".[0] " + op + " .[1]")
	if err != nil {
		panic(err)
	}
	c, err := gojq.Compile(q)
	if err != nil {
		panic(err)
	}
	return func(l, r any) any {
		v, _ := c.Run([]any{l, r}).Next()
		return v
	}
}

// options registers the guard and the operators with a compilation.
func (g *guard) options() []gojq.CompilerOption {
	opts := []gojq.CompilerOption{
		gojq.WithFunction(checkFunc, 1, 5, g.check),
		gojq.WithFunction("_hx_tostring", 0, 0, func(v any, _ []any) any {
			if s, ok := v.(string); ok {
				return s
			}
			return g.print(v)
		}),
		gojq.WithFunction("_hx_tojson", 0, 0, func(v any, _ []any) any { return g.print(v) }),
		// the charges of what a filter builds by many small steps
		// (sandbox.go places the calls)
		gojq.WithFunction(slotFunc, 0, 0, func(v any, _ []any) any {
			// a slot, a boxed scalar, the copies the array leaves behind
			// as it grows (garbage until collected), and the heap's room
			// for garbage between collections: TestQueryMemory
			n := int64(5 * costSlot)
			if s, ok := v.(string); ok {
				n += costBoxed + int64(len(s))
			}
			return g.charged(v, n)
		}),
		gojq.WithFunction(objectFunc, 0, 0, func(v any, _ []any) any {
			m, _ := v.(map[string]any)
			return g.charged(v, costObject+costEntry*int64(len(m)))
		}),
		gojq.WithFunction(depthFunc, 1, 1, func(v any, args []any) any {
			// the stack of the recursion, on top of what the meter holds
			if d, ok := args[0].(int); !ok || int64(d)*costCall > g.limit-g.used {
				return g.refuse()
			}
			return v
		}),
	}
	for name, op := range guardedOpFuncs {
		opts = append(opts, gojq.WithFunction(name, 2, 2, func(_ any, args []any) any {
			l, r := args[0], args[1]
			if v, ok := op.fast(l, r); ok {
				return v
			}
			if !g.allowed(op.kind, args) {
				return g.refuse()
			}
			return op.slow(l, r)
		}))
	}
	return opts
}

// charged returns v once n more bytes are charged to the query's meter,
// else refuses.
func (g *guard) charged(v any, n int64) any {
	if !g.charge(n) {
		return g.refuse()
	}
	return v
}

// compareOp is a comparison: gojq's operators are gojq.Compare.
// print is gojq's tojson (gojq.Marshal is its encoder) of a value whose
// text fits out.
func (g *guard) print(v any) any {
	if !g.allowed("text", []any{"json", v}) {
		return g.refuse()
	}
	b, err := gojq.Marshal(v)
	if err != nil {
		return err
	}
	return string(b)
}

func compareOp(ok func(int) bool) guardedOp {
	return guardedOp{"cmp", func(l, r any) (any, bool) {
		if scalar(l) && scalar(r) {
			return ok(gojq.Compare(l, r)), true
		}
		return nil, false
	}, func(l, r any) any { return ok(gojq.Compare(l, r)) }}
}

// scalar reports a value no comparison recurses into.
func scalar(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return false
	}
	return true
}

// number reads an int or float64 operand as gojq does; false for anything
// else (big integers included).
func number(v any) (any, bool) {
	switch x := v.(type) {
	case int, float64:
		return x, true
	case json.Number:
		if i, err := x.Int64(); err == nil && math.MinInt <= i && i <= math.MaxInt {
			return int(i), true
		}
		if strings.ContainsAny(string(x), ".eE") {
			if f, err := x.Float64(); err == nil {
				return f, true
			}
		}
	}
	return nil, false
}

func fastPlus(l, r any) (any, bool) {
	if a, ok := l.(string); ok {
		if b, ok := r.(string); ok && len(a)+len(b) <= 1<<16 {
			return a + b, true
		}
		return nil, false
	}
	return fastArith('+')(l, r)
}

// fastArith computes op over two ints or floats the way gojq does, and
// declines an int result that would overflow, an int division that is
// not plain, and a division by zero.
func fastArith(op byte) func(l, r any) (any, bool) {
	return func(l, r any) (any, bool) {
		x, ok := number(l)
		if !ok {
			return nil, false
		}
		y, ok := number(r)
		if !ok {
			return nil, false
		}
		a, aInt := x.(int)
		b, bInt := y.(int)
		if aInt && bInt {
			return intArith(op, a, b)
		}
		f, g := toFloat(x), toFloat(y)
		switch op {
		case '+':
			return f + g, true
		case '-':
			return f - g, true
		case '*':
			return f * g, true
		default:
			if g == 0 {
				return nil, false
			}
			return f / g, true
		}
	}
}

func toFloat(v any) float64 {
	if i, ok := v.(int); ok {
		return float64(i)
	}
	return v.(float64)
}

func intArith(op byte, l, r int) (any, bool) {
	switch op {
	case '+':
		if v := l + r; (v >= l) == (r >= 0) {
			return v, true
		}
	case '-':
		if v := l - r; (v <= l) == (r >= 0) {
			return v, true
		}
	case '*':
		if v := l * r; r != -1 && (r == 0 || v/r == l) {
			return v, true
		}
	default:
		if r != 0 && r != -1 {
			if l%r == 0 {
				return l / r, true
			}
			return float64(l) / float64(r), true
		}
	}
	return nil, false
}
