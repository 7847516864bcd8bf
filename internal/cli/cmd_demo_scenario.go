package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/agent/loop"
)

// The demo's scripted scenario: a root agent investigates a failed nightly
// build with three tools, the read tool and a sub-agent. Tool results are
// generated deterministically, so the same owner gets the same references
// on every run.

const (
	demoBuildLines = 20000
	demoSuites     = 400
	demoSubAgent   = "researcher"
	demoKeepRecent = 2
	// demoLogBytes and demoReportBytes are the sizes of the long build log
	// and of the test report (TestDemoResultSizes checks them);
	// demoMaxToolResults bounds the tool results of one history.
	demoLogBytes       = 1058471
	demoReportBytes    = 27467
	demoMaxToolResults = 16
	demoTask           = "Summarize the failing suites of the nightly test report."
	demoQuestion       = "The nightly build failed. Find out why, and whether the tests are affected."
	demoAnswer         = "The nightly build failed because the linker ran out of memory (ld was killed by signal 9 " +
		"while linking the server binary); the 3 failing test suites are all link steps of the same target, " +
		"so the tests themselves are not affected. Raising the build runner's memory limit fixes both."
)

// demoBuildLog returns a CI build log of n lines whose failure is near the
// end.
func demoBuildLog(n int) string {
	var b strings.Builder
	b.Grow(n * 64)
	for i := 1; i <= n; i++ {
		switch {
		case i == n-3:
			b.WriteString("[ld] error: linker command failed: ld killed by signal 9 (out of memory) while linking bin/server\n")
		case i > n-3:
			fmt.Fprintf(&b, "[ci] step %d/3 after failure: cleaning up\n", i-(n-3))
		default:
			fmt.Fprintf(&b, "[cc] compiling pkg/module%03d/file%05d.go ok (%d ms)\n", i%997, i, 3+i*7%91)
		}
	}
	return b.String()
}

// demoSuite is one entry of the test report.
type demoSuite struct {
	Name     string `json:"name"`
	Tests    int    `json:"tests"`
	Failures int    `json:"failures"`
	Millis   int    `json:"duration_ms"`
	Failure  string `json:"failure,omitempty"`
}

// demoReport returns a JSON test report of n suites, three of them failing.
func demoReport(n int) []demoSuite {
	out := make([]demoSuite, n)
	for i := range out {
		s := demoSuite{Name: fmt.Sprintf("suite/%03d-%s", i, []string{"api", "store", "cli", "link"}[i%4]),
			Tests: 20 + i*13%50, Millis: 100 + i*37%2000}
		if i%100 == 3 && i < 300 {
			s.Failures = 1
			s.Failure = "link step failed: ld killed by signal 9"
		}
		out[i] = s
	}
	return out
}

func jsonArgs(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

// demoTools are the root agent's tools (besides read_artifact and delegate).
func demoTools() []agent.Tool {
	return []agent.Tool{
		{
			Spec: agent.ToolSpec{Name: "build_log", Description: "The nightly build's log.", Parameters: objectSchema},
			Func: func(_ context.Context, args json.RawMessage) (any, error) {
				var a struct {
					Lines int `json:"lines"`
				}
				if err := json.Unmarshal(args, &a); err != nil || a.Lines <= 0 || a.Lines > 1e6 {
					return nil, fmt.Errorf(`build_log: arguments must be {"lines": 1..1000000}`)
				}
				return demoBuildLog(a.Lines), nil
			},
		},
		{
			Spec: agent.ToolSpec{Name: "ticket", Description: "A ticket of the issue tracker.", Parameters: objectSchema},
			Func: func(_ context.Context, args json.RawMessage) (any, error) {
				var a struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(args, &a)
				return map[string]any{"id": a.ID, "title": "Nightly build red since 02:00", "status": "open",
					"labels": []string{"ci", "build"}}, nil
			},
		},
	}
}

// demoSubTools are the sub-agent's tools.
func demoSubTools() []agent.Tool {
	return []agent.Tool{{
		Spec: agent.ToolSpec{Name: "test_report", Description: "The nightly test report.", Parameters: objectSchema},
		Func: func(_ context.Context, args json.RawMessage) (any, error) {
			var a struct {
				Suites int `json:"suites"`
			}
			if err := json.Unmarshal(args, &a); err != nil || a.Suites <= 0 || a.Suites > 1e5 {
				return nil, fmt.Errorf(`test_report: arguments must be {"suites": 1..100000}`)
			}
			return demoReport(a.Suites), nil
		},
	}}
}

// errInline is returned by a step that reads a stored result when the
// result it would read stayed inline (a threshold above its size): the
// model has it in full, so the step, and the ones after it that read the
// same result (skip), give way to the next (see skippable).
type errInline struct{ skip int }

func (e errInline) Error() string { return "the result stayed inline" }

// skippable plays steps in order as one script, passing over the steps an
// errInline skips.
func skippable(steps ...loop.Step) []loop.Step {
	var mu sync.Mutex
	next := 0
	play := func(h []loop.Message) (loop.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		for next < len(steps) {
			r, err := steps[next](h)
			next++
			var inline errInline
			if errors.As(err, &inline) {
				next += inline.skip
				continue
			}
			return r, err
		}
		return loop.Reply{}, loop.ErrScriptEnded
	}
	out := make([]loop.Step, len(steps))
	for i := range out {
		out[i] = play
	}
	return out
}

// onLatest is a step calling tool with args plus the reference of the
// newest tool result, saying why, as a model would after reading a notice.
// When that result stayed inline, it skips itself and the next skip steps.
func onLatest(tool, why string, args map[string]any, skip int) loop.Step {
	return func(h []loop.Message) (loop.Reply, error) {
		last := len(h) - 1
		for last >= 0 && h[last].Role != loop.RoleTool {
			last--
		}
		if last < 0 {
			return loop.Reply{}, loop.ErrNoReference
		}
		ref, ok := loop.LatestReference(h[last:])
		if !ok {
			return loop.Reply{}, errInline{skip}
		}
		a := map[string]any{"reference": ref.String()}
		for k, v := range args {
			a[k] = v
		}
		return loop.Reply{Content: why, ToolCalls: []loop.ToolCall{{Name: tool, Arguments: jsonArgs(a)}}}, nil
	}
}

var matchLine = regexp.MustCompile(`(?m)^(\d+):`)

// readAroundMatch is a step reading, with the read tool's line mode, the
// lines around the first match the last search answered with, in the
// newest stored result.
func readAroundMatch(read string, before, count int64) loop.Step {
	return func(h []loop.Message) (loop.Reply, error) {
		var line int64
		for i := len(h) - 1; i >= 0 && line == 0; i-- {
			if h[i].Role == loop.RoleTool {
				if m := matchLine.FindStringSubmatch(h[i].Content); m != nil {
					line, _ = strconv.ParseInt(m[1], 10, 64)
				}
			}
		}
		if line == 0 {
			line = before + 1 // the search was refused: read from the start
		}
		ref, ok := loop.LatestReference(h)
		if !ok {
			return loop.Reply{}, loop.ErrNoReference
		}
		a := map[string]any{"reference": ref.String(), "start_line": max(1, line-before), "line_count": count}
		return loop.Reply{Content: "Reading the lines around the error.", ToolCalls: []loop.ToolCall{{Name: read, Arguments: jsonArgs(a)}}}, nil
	}
}

// demoRootScript is the root agent's script: it finds the failing line by
// searching the stored log, not by paging through it (and reads it inline
// when a threshold over its size keeps it there).
func demoRootScript(read, search string) []loop.Step {
	return skippable(
		// The short logs of three earlier nights first; tonight's long log
		// then takes the history over its budget, and the two oldest are
		// masked.
		loop.CallTool("build_log", jsonArgs(map[string]int{"lines": 36})),
		loop.CallTool("build_log", jsonArgs(map[string]int{"lines": 38})),
		loop.CallTool("build_log", jsonArgs(map[string]int{"lines": 40})),
		loop.CallTool("build_log", jsonArgs(map[string]int{"lines": demoBuildLines})),
		onLatest(search, "Searching the stored log for the error.", map[string]any{"pattern": "error", "context_lines": 1}, 1),
		readAroundMatch(read, 5, 9),
		loop.CallTool("ticket", jsonArgs(map[string]string{"id": "BUILD-1423"})),
		loop.CallTool("delegate", jsonArgs(map[string]string{"task": demoTask})),
		loop.CallTool("build_log", jsonArgs(map[string]int{"lines": demoBuildLines})), // again: existing reference
		loop.Say(demoAnswer),
	)
}

// demoSubScript is the sub-agent's script: it asks the stored JSON report
// for the failing suites (or reads them inline).
func demoSubScript(query string) []loop.Step {
	return skippable(
		loop.CallTool("test_report", jsonArgs(map[string]int{"suites": demoSuites})),
		onLatest(query, "Querying the report for the failing suites.",
			map[string]any{"filter": ".[] | select(.failures > 0) | {name, failure}"}, 0),
		loop.Say("3 of 400 suites failed: suite/003-link, suite/103-link and suite/203-link, "+
			"each with \"link step failed: ld killed by signal 9\"; every other suite passed."),
	)
}
