package viewengine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/internal/procstat"
)

// The sweep runs hostile filters in a child process (this test binary,
// re-executed), so that a fatal stack overflow or an out-of-memory, which
// no recover catches, fails the parent test instead of killing the whole
// test binary. The child prints each case before running it, so a crash
// names its case.
const sweepEnv = "HYBRIDCTX_QUERY_SWEEP"

func runChild(t *testing.T, name string) {
	t.Helper()
	if testing.Short() {
		t.Skip("hostile filters take a while; not in -short")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), sweepEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+name)) {
		last := ""
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "case: ") {
				last = l
			}
		}
		tail := out[max(0, len(out)-3000):]
		t.Fatalf("child %s: %v; last %s\n%s", name, err, last, tail)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "sweep_test.go") {
			t.Log(strings.TrimSpace(l))
		}
	}
}

func inChild(t *testing.T) {
	if os.Getenv(sweepEnv) == "" {
		t.Skip(sweepEnv + " unset: run by its parent test")
	}
}

// runValue runs filter with . = in (a value built in Go, deeper than any
// document can be), and reports whether the guard refused a step.
func runValue(t testing.TB, in any, filter string, lim QueryLimits) (Answer, bool) {
	t.Helper()
	f, err := CompileFilter(filter, lim.Memory)
	if err != nil {
		t.Fatalf("%q: %v", filter, err)
	}
	q := &queryScan{code: f.code, guard: f.guard, limits: lim, page: pager{budget: 1 << 16, noun: "results"}}
	return q.run(context.Background(), []any{in}), f.guard.tripped
}

func nestArrays(depth int) any {
	var v any
	for range depth {
		v = []any{v}
	}
	return v
}

func nestObjects(depth int) any {
	var v any = "leaf"
	for range depth {
		v = map[string]any{"a": v}
	}
	return v
}

// doubled is a value of depth n whose every level holds the one below
// twice: 2^n leaves in print, n+1 allocations in memory.
func doubled(n int) any {
	var v any = "ab"
	for range n {
		v = []any{v, v}
	}
	return v
}

// recursiveSteps are the built-ins and operators of gojq that recurse over
// a value or walk all of it, each applied to "."; the guard must refuse
// them on a value too deep or too large.
var recursiveSteps = []string{
	"contains(.)", "inside(.)", "tojson", "tostring", "@text", "@json", "@base64", "@html", "@uri",
	`"x\(.)"`, `@json "x\(.)"`, "sort", ". == .", ". != .", ". < .", ". >= .", "unique", "min", "max",
	"flatten", "flatten(1e9)", "group_by(.)", "sort_by(.)", "unique_by(.)", "min_by(.)", "max_by(.)",
	"bsearch(.)", "indices(.)", "index(.)", "rindex(.)", ". - .", "{a: .} * {a: .}", "IN(.)",
	"[.] | IN(.[])", "[.,.] | unique", "{(tojson): 1}", "[[.],[.]] | delpaths(.)", "[.] | inside([.])", "[.] | contains([.])", "tojson | fromjson",
	"[limit(3; repeat(.))] | tojson",
}

// otherSteps may finish, fail as filter errors or be stopped; they must not
// crash or outgrow the bounds.
var otherSteps = []string{
	"length", "keys", "has(0)", "reverse", "map(.)", "to_entries", "add", `join(",")`, "[paths] | length",
	"[..] | length", "walk(.)", "[tostream] | length", "getpath([0,0,0])", "setpath([0,0]; 1)", ".[0][0] = 1",
	".[0] |= .", "[splits(\"a\")]", "implode", "any", "all", "try error(.) catch 1", "try error(.) catch .",
	"try (.a) catch .", "@sh", "@csv", "first(.[])", "[.[]?] | length", "del(..)?", "pick(.[0])",
	"[getpath(paths)] | length", "fromstream(tostream)", "to_entries | from_entries", "ascii_downcase",
	"[.] | combinations | length", ".[0] += 1", "tostream", ".", "[.] | del(.[0])", "[., .] | transpose",
}

// TestQuerySweep runs TestQuerySweepChild in a child process.
func TestQuerySweep(t *testing.T) {
	skipUnlessLong(t)
	runChild(t, "TestQuerySweepChild")
}

// TestQuerySweepChild: every recursive built-in over a value a million
// levels deep (arrays and objects), over a value of 2^40 printed leaves,
// and over a stored document as deep as the parser allows; then the
// probe's filters, which build their values themselves.
func TestQuerySweepChild(t *testing.T) {
	inChild(t)
	inputs := map[string]any{
		"deep arrays":  nestArrays(1_000_000),
		"deep objects": nestObjects(1_000_000),
		"doubled":      doubled(40),
		"wide":         wide(1_000_000),
	}
	steps := append(append([]string{}, recursiveSteps...), otherSteps...)
	// Under -race (several times slower) the part that could crash: the
	// recursive steps over the deep values; the rest runs without -race.
	if queryRace {
		delete(inputs, "doubled")
		delete(inputs, "wide")
		steps = recursiveSteps
	}
	// A short time limit: the steps that run by many small steps end by
	// it; the recursive ones must be refused by the guard, at once.
	short := QueryLimits{MaxBytes: testMaxBytes, Timeout: 300 * time.Millisecond, Memory: testMemory}
	for name, in := range inputs {
		for _, f := range steps {
			fmt.Fprintf(os.Stderr, "case: %s | %s\n", name, f)
			start := time.Now()
			a, tripped := runValue(t, in, f, short)
			if !acceptable(a) {
				t.Errorf("%s | %s: %v/%v", name, f, a.Outcome, a.Failure)
			}
			if name != "wide" && contains(recursiveSteps, f) && !tripped && (a.Outcome != Failed || a.Failure != FilterError) {
				t.Errorf("%s | %s: %v/%v, want the guard's refusal", name, f, a.Outcome, a.Failure)
			}
			if d := time.Since(start); d > time.Second {
				t.Logf("%s | %s: %v/%v in %v (refused by the guard: %v)", name, f, a.Outcome, a.Failure, d, tripped)
			}
		}
	}
	deepDoc := strings.Repeat(`{"a":[`, guardDepth/2-1) + "1" + strings.Repeat("]}", guardDepth/2-1)
	for _, f := range steps {
		fmt.Fprintf(os.Stderr, "case: deep document | %s\n", f)
		a := runFilter(t, deepDoc, f, short)
		if !acceptable(a) {
			t.Errorf("deep document | %s: %v/%v", f, a.Outcome, a.Failure)
		}
	}
	long := QueryLimits{MaxBytes: testMaxBytes, Timeout: time.Minute, Memory: testMemory}
	if queryRace {
		long = defaultLimits
	}
	for _, f := range probeFilters {
		fmt.Fprintf(os.Stderr, "case: probe | %s\n", f)
		start := time.Now()
		// A minute, so that the guard, not the clock, must stop them.
		a := runFilter(t, probeDoc, f, long)
		if a.Outcome != Failed || a.Failure != LimitExceeded {
			t.Errorf("%s: %v/%v", f, a.Outcome, a.Failure)
		}
		t.Logf("probe %s: %v/%v in %v", f, a.Outcome, a.Failure, time.Since(start))
	}
}

// acceptable: a result, one over the budget, a filter error or a stop.
func acceptable(a Answer) bool {
	return a.Outcome == Resolved || a.Outcome == OverBudget ||
		a.Outcome == Failed && (a.Failure == LimitExceeded || a.Failure == FilterError)
}

func wide(n int) any {
	vs := make([]any, n)
	for i := range vs {
		vs[i] = i % 7
	}
	return vs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// probeDoc is a small document of about a kilobyte.
var probeDoc = `{"a":[1,2,3],"b":"` + strings.Repeat("some text of a document ", 40) + `"}`

// probeFilters are the adversarial probe's inputs, kept as they were sent.
var probeFilters = []string{
	`reduce range(1500000) as $i (null; [.]) | contains(.)`,
	`reduce range(1500000) as $i (null; [.]) | inside(.)`,
	`[0] | .[2e8] = 1 | tojson | length`,
	`[limit(300000; repeat(.))] | tojson | length`,
}

// TestQueryMemory runs TestQueryMemoryChild in a child process.
func TestQueryMemory(t *testing.T) {
	if queryRace {
		t.Skip("memory figures mean nothing under -race")
	}
	runChild(t, "TestQueryMemoryChild")
}

// TestQueryMemoryChild: the peak resident memory the process gains while a
// hostile filter runs stays within the query memory bound, and each ends
// as limit_exceeded. Linux only (it resets the peak through
// /proc/self/clear_refs).
func TestQueryMemoryChild(t *testing.T) {
	inChild(t)
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skip("cannot reset the peak resident size here:", err)
	}
	filters := append([]string{
		`reduce range(40) as $i ("ab"; [., .]) | tojson`,
		`reduce range(40) as $i ("ab"; . + .)`,
		`[limit(100000; repeat("x" * 1000))] | add`,
		`"abc" * 1e9`,
		`[range(1e9)]`,
		`def f: [f]; f`,
		`[.] | .[1e7] = 1 | [.[] | tostring]`,
		`"x" * 1000000 | [match("x"; "g")] | length`,
		`"x" * 1000000 | explode`,
		`[limit(20; repeat("x" * 1000000))] | join(",")`,
		`reduce range(64) as $i (3; . * .)`,
		`reduce range(1e6) as $i ({}; .["k\($i)"] = "v" * 100)`,
		// a recursion of the filter's own functions: the interpreter's stack
		`def f: 1 + f; f`, `def f: (f, 1); last(f)`, `def f(g): [g | f(g)]; f(.)`, `0 | [recurse(.+1)]`,
	}, probeFilters...)
	for _, f := range filters {
		fmt.Fprintf(os.Stderr, "case: memory | %s\n", f)
		runtime.GC()
		debug.FreeOSMemory()
		before := procStatus(t, "VmRSS")
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		a := runFilter(t, probeDoc, f, defaultLimits)
		peak := procStatus(t, "VmHWM")
		if a.Outcome != Failed || a.Failure != LimitExceeded {
			t.Errorf("%s: %v/%v", f, a.Outcome, a.Failure)
		}
		growth := peak - before
		t.Logf("memory %s: peak RSS growth %d MiB, %v", f, growth>>20, time.Since(start).Round(time.Millisecond))
		if growth > testMemory {
			t.Errorf("%s: peak RSS grew by %d MiB, over the %d MiB bound", f, growth>>20, testMemory>>20)
		}
	}
}

// procStatus reads a size field of this process's /proc status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	n, err := procstat.Bytes(0, field)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
