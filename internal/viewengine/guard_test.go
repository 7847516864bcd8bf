package viewengine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/itchyny/gojq"
)

// runFilter runs filter over body as the query view does, with limits.
func runFilter(t testing.TB, body, filter string, lim QueryLimits) Answer {
	t.Helper()
	f, err := CompileFilter(filter, lim.Memory)
	if err != nil {
		t.Fatalf("%q: %v", filter, err)
	}
	q := &queryScan{code: f.code, guard: f.guard, limits: lim, page: pager{budget: 1 << 20, noun: "results"}, body: []byte(body)}
	return q.Answer(context.Background(), int64(len(body)))
}

// The root package's default limits (DefaultQueryMaxBytes and
// DefaultQueryMemoryBytes), which the tests run under.
const (
	testMaxBytes = 16 << 20
	testMemory   = 64 << 20
)

var defaultLimits = QueryLimits{MaxBytes: testMaxBytes, Timeout: 2 * time.Second, Memory: testMemory}

// plainGojq is the filter's output under gojq without the sandbox, in the
// query view's format.
func plainGojq(t *testing.T, body, filter string) (string, bool) {
	t.Helper()
	q, err := gojq.Parse(filter)
	if err != nil {
		t.Fatal(err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := decodeValues([]byte(body), &meter{limit: 1 << 62})
	var out strings.Builder
	for _, d := range docs {
		it := code.Run(d)
		for {
			v, ok := it.Next()
			if !ok {
				break
			}
			if _, isErr := v.(error); isErr {
				return out.String(), false
			}
			b, err := appendJSON(nil, v, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(b)
			out.WriteByte('\n')
		}
	}
	return out.String(), true
}

// TestQueryGuardKeepsSemantics: the rewrite onto the guarded prelude gives
// the results plain gojq gives, in the same order (the cartesian products
// of operators and of functions with several arguments included), and the
// same failures.
func TestQueryGuardKeepsSemantics(t *testing.T) {
	body := `{"items":[{"id":1,"name":"a","tags":["x","y"]},{"id":2,"name":"b","tags":["y"]},{"id":3,"name":"c<&>","tags":[]}],"n":12345678901234567890123,"s":"a,b,c","o":{"k":{"x":1}}}`
	filters := []string{
		`(1,2) + (10,20)`, `(1,2) - (10,20)`, `(1,2) * (10,20)`, `(1,2) / (10,20)`, `(1,2) % (10,20)`,
		`(1,2) == (1,2)`, `(1,2) < (2,1)`, `(1,2) >= (2,1)`, `(1,2) != (2,1)`, `(1,2) <= (2,1)`, `(1,2) > (2,1)`,
		`"ab" * 3`, `{"a":{"b":1}} * {"a":{"c":2}}`, `"a,b" / ","`, `[1,2,3] - [2]`, `.n * .n`, `.n + 1`,
		`.items | map(.id) | add`, `[.items[].name] | join("-")`, `.items | map(.tags) | flatten`, `[[1,[2]],3] | flatten(1)`,
		`.items | sort_by(.name) | map(.id)`, `.items | group_by(.tags | length) | map(length)`, `.items | min_by(.id), max_by(.id)`,
		`.items | unique_by(.tags | length) | length`, `[3,1,2] | sort, unique, min, max`, `[1,2,3] | bsearch(2)`,
		`.items[0] | contains({tags:["x"]})`, `{tags:["x"]} | inside(.items[0])`, `"abcb" | indices("b"), index("b"), rindex("b")`,
		`[1,2,1,2] | indices([1,2])`, `. | tojson | length`, `.items[0] | tostring`, `.o | @json, @text, @html "x\(.)", @base64, @uri`,
		`[1,"a b",null] | @csv, @tsv, @sh`, `"YWJj" | @base64d`, `"x\(1,2)y\(3,4)"`, `@base64 "a\(.s)b"`, `"\(.items[0].name)"`,
		`{"a\(1,2)": 3}`, `.o | to_entries`, `.o | with_entries(.value |= 1)`, `[{key:"a",value:1}] | from_entries`,
		`.items[0].tags[1] = 5`, `.items[] |= .id`, `.items[0].id += 10`, `.items[0].id -= 10`, `.items[0].id /= 2`, `.items[0].id %= 2`,
		`.x //= 7 | .x`, `.items |= map(select(.id > 1)) | .items | length`, `del(.items[0, 2]) | .items | length`,
		`[paths] | length`, `[paths(type == "number")] | length`, `pick(.o.k.x)`, `[.o | tostream]`, `fromstream(.o | tostream)`,
		`.o | getpath(["k","x"])`, `[path(..)] | length`, `path(.items[0].tags)`, `[.items[] | getpath(["id"])]`,
		`.s | split(",")`, `.s | split(", *"; null)`, `.s | [splits(",")]`, `.s | test("B"; "i")`, `.s | [match("[a-c]"; "g").offset]`,
		`.s | capture("(?<x>[a-z])")`, `.s | [scan("[a-z]")]`, `.s | sub(","; "+")`, `.s | gsub(","; "+")`, `.s | gsub("(?<c>[a-z])"; "<\(.c)>")`,
		`.s | explode | implode`, `"[1,2]" | fromjson`, `"12" | tonumber`, `[[1,2],[3]] | transpose`, `0 | strftime("%Y")`,
		`IN(1,2)`, `2 | IN(1,2)`, `INDEX(.items[]; .id) | keys`, `[.items | JOIN(INDEX(.id); .id)] | length`,
		`.items | .[1:] | length`, `.items[-1].id`, `.items[.items | length - 1].id`, `.o["k"]`, `.o.k | has("x")`, `[.[]?]|length`,
		`reduce range(5) as $i (0; . + $i)`, `[limit(3; repeat(1))]`, `[range(0; 10; 3)]`, `def f(x): x * 2; f(3)`,
		`[.items[] | select(.name | test("a|b"))] | length`, `.items | any(.id == 2)`, `.items | all(.id > 0)`, `walk(if type == "number" then . + 1 else . end) | .items[0].id`,
		`try error("x") catch .`, `.items[0] | keys`, `[.items[] | .name | ascii_upcase]`, `"a" | ltrimstr("a")`,
		`{} | .a.b.c = 1`, `null | .[3] = 1`, `[1,2,3] | .[1:] = ["x"]`, `[1,2,3] | del(.[0])`, `[1,null] | map(values)`, `{"a":1} | add`,
		`9223372036854775807 + 1`, `-9223372036854775808 - 1`, `-9223372036854775808 * -1`, `3037000500 * 3037000500`,
		`7 / 2`, `6 / 3`, `1 / 0`, `1.5 / 0`, `0 / -1`, `.items[0].id / 3`, `null + 1`, `1 + null`, `"a" + null`, `null + null`,
		`[1] + [2]`, `{a:1} + {b:2}`, `{} - 1`, `"a" - "b"`, `"abc" / "b"`, `10 % 3`, `[.items[].id * 1.5]`, `.n - .n`, `.n * 2`,
		`1 == 1.0`, `"a" < "b"`, `[1] < [1,2]`, `{} == {}`, `null == false`, `.items[0].id == 1`, `infinite + 1`, `nan < 1`,
		`-(.n)`, `.n / 7`, `.n == .n + 0`, `[.items[] | .id - 1, .id + 0.5]`, `"x" * 0`, `"x" * -1`, `"x" * 1.5`, `"x" * nan`,
		`.items[0] * {"id": 5}`, `1 - "a"`, `[1,2,3] - [2, 3]`, `"abc" | .[1:]`, `[.items[].id] | @text "\(.)"`, `[1,2] | combinations(2) | length`, `splits("x")?`, `.[]?.x?`,
	}
	for _, f := range filters {
		want, ok := plainGojq(t, body, f)
		a := runFilter(t, body, f, defaultLimits)
		if !ok {
			if a.Outcome != Failed || a.Failure != FilterError {
				t.Errorf("%s: want filter_error, got %v/%v", f, a.Outcome, a.Failure)
			}
			continue
		}
		if a.Outcome != Resolved {
			t.Errorf("%s: %v/%v, want %q", f, a.Outcome, a.Failure, want)
			continue
		}
		got := string(a.Body)
		got = got[:strings.LastIndexByte(strings.TrimSuffix(got, "\n"), '\n')+1]
		if got != want {
			t.Errorf("%s:\n got %q\nwant %q", f, got, want)
		}
	}
}

// FuzzQueryFilter runs arbitrary filters over a small document: each ends
// as a result, one over the budget, a filter error or a stop, and never
// takes the process down (a fatal error fails the fuzzer with its input).
func FuzzQueryFilter(f *testing.F) {
	for _, s := range append([]string{
		`.a[1]`, `[paths]`, `tojson`, `.[] |= .`, `"\(.)" * 3`, `@base64 "x\(.a)"`, `[splits("o")]`,
		`reduce range(30) as $i (.; [., .]) | tostring`, `[.a[] as $x | $x * $x]`, `{} | .a.b.c = 1`,
		`def f: [f]; f`, `[limit(5; repeat(.))] | flatten`, `.b | gsub("o"; "0")`, `to_entries | from_entries`,
		`.a | .[1e6] = 1 | length`, `[.a | combinations]`, `. as $d | $d | contains($d)`, `getpath(["a", 0])`,
	}, probeFilters...) {
		f.Add(s)
	}
	lim := QueryLimits{MaxBytes: testMaxBytes, Timeout: 100 * time.Millisecond, Memory: testMemory}
	f.Fuzz(func(t *testing.T, filter string) {
		f, err := CompileFilter(filter, lim.Memory)
		if err != nil {
			if strings.Contains(err.Error(), filter) && len(filter) > 3 {
				t.Fatalf("%q: %v", filter, err)
			}
			return
		}
		q := &queryScan{code: f.code, guard: f.guard, limits: lim, page: pager{budget: 4096, noun: "results"}, body: []byte(probeDoc)}
		if a := q.Answer(context.Background(), int64(len(probeDoc))); !acceptable(a) {
			t.Fatalf("%q: %v/%v", filter, a.Outcome, a.Failure)
		}
	})
}

// TestQueryGuardBounds: each bound refuses a step just over it (the guard
// itself, not the clock: a minute's time limit), and lets one within it
// run.
func TestQueryGuardBounds(t *testing.T) {
	skipUnlessLong(t)
	long := QueryLimits{MaxBytes: testMaxBytes, Timeout: time.Minute, Memory: testMemory}
	refused := []string{
		`[1,[2]] | .[[2]]`, `"abc" * 1e8`, `"abc" * 1e6`, `[range(300000)] | sort`, `[range(300000)] | unique`,
		`null | .[2000000] = 1`, `null | setpath([2000000]; 1)`, `{} | .a[1000000][1000000] = 1`,
		`"1" * 2000 | tonumber`, `reduce range(20) as $i (3; . * .)`, `"x" | test("a" * 2000)`,
		`"x" * 1000000 | [match("x"; "g")]`, `[range(5000)] as $a | $a - $a`, `[range(5000)] as $a | $a | contains($a)`,
		`"x" * 1000000 | explode`, `[limit(2; repeat("[" * 1000000))] | add | fromjson`, `"1" * 1001 | fromjson`, `[limit(3; repeat("\u0000" * 1000000))] | add | tojson`, `[limit(3; repeat("<" * 1000000))] | add | @html`,
		`[limit(20; repeat("x" * 1000000))] | add`, `[limit(20; repeat("x" * 1000000))] | join(",")`,
		`([limit(9; repeat("x" * 1000000))] | add) as $s | $s + $s`, `"x" * 1000000 | indices("x")`, `"x" * 100000 | index("x" * 100)`, `[range(600000)] | . + .`, `[[range(1100000)]] | flatten`,
		`[range(400000)] as $r | [$r, $r] | transpose`, `null | setpath([range(10001) | "a"]; 1)`, `([limit(9; repeat("x" * 1000000))] | add) as $s | "\($s)\($s)"`,
		`reduce range(20000) as $i (null; [.]) | tojson`, `reduce range(20000) as $i (null; {a: .}) | . == .`,
		`reduce range(40) as $i (1; [., .]) | flatten`, `reduce range(20000) as $i (null; [.])`,
		`try (reduce range(20000) as $i (null; [.]) | tojson) catch "caught"`,
		`"a" * 1000000 | [match("a*b|a"; "g")] | length`, `"a" * 20000 | [match("a*b|a"; "g")] | length`,
	}
	for _, f := range refused {
		a, tripped := runValue(t, nil, f, long)
		if a.Outcome != Failed || a.Failure != LimitExceeded || !tripped && f != `reduce range(20000) as $i (null; [.])` {
			t.Errorf("%s: %v/%v (guard: %v), want the guard's limit_exceeded", f, a.Outcome, a.Failure, tripped)
		}
	}
	allowed := []string{
		`[range(100000)] | sort | length`, `null | .[100000] = 1 | length`, `"1" * 900 | tonumber | . > 1`, `"1" * 1000 | fromjson | . > 1`,
		`"x" * 10000 | [match("x"; "g")] | length`, `[range(3000)] as $r | [$r, $r] | transpose | length`, `"x" * 100000 | indices("x") | length`, `[range(2000)] as $a | $a - $a`, `"abc" * 300000 | length`,
		`reduce range(5000) as $i (null; [.]) | tojson | length`, `[limit(5; repeat("x" * 1000000))] | add | length`,
		`"x" * 100000 | explode | implode | length`, `reduce range(10) as $i (3; . * .) | . > 0`,
	}
	for _, f := range allowed {
		if a, tripped := runValue(t, nil, f, long); a.Outcome != Resolved || tripped {
			t.Errorf("%s: %v/%v (guard: %v), want a result", f, a.Outcome, a.Failure, tripped)
		}
	}
}

// TestQueryHugeNumbers: a number of more than guardDigits digits in a
// document is read as a float, so no step parses it as a big integer.
func TestQueryHugeNumbers(t *testing.T) {
	body := `{"n":` + strings.Repeat("9", 100000) + `,"m":` + strings.Repeat("7", 50) + `}`
	a := runFilter(t, body, `.n + 1, .m + 1, (.n | floor | tostring | length)`, defaultLimits)
	if got := string(a.Body); a.Outcome != Resolved || !strings.HasPrefix(got, "1.7976931348623157e+308\n"+strings.Repeat("7", 49)+"8\n") {
		t.Fatalf("%v/%v %q", a.Outcome, a.Failure, got)
	}
}
