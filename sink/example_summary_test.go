package sink_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/sink"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// A run summary and a log line per decision, from one reporter.
func ExampleSummary() {
	ctx := context.Background()
	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 100}, nil)

	summary := sink.NewSummary()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == "time" { // the record's and the event's: keep the output stable
				return slog.Attr{}
			}
			return a
		}}))
	rep := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "run-1", AgentID: "triage",
		Sinks: []hybridctx.Sink{summary, sink.NewSlog(logger, nil)}})
	ctx = hybridctx.WithReporter(ctx, rep)

	_, _ = off.Offload(ctx, hybridctx.Call{Tool: "grep", ID: "c1"}, "3 matches")
	_, _ = off.Offload(ctx, hybridctx.Call{Tool: "cat", ID: "c2"}, strings.Repeat("x", 10000))

	r := summary.Report()
	fmt.Println(r.Events, r.Outcomes[hybridctx.Inline], r.Outcomes[hybridctx.Offloaded], r.BytesKeptOutOfContext, r.LargestInlineBytes)
	// Output:
	// level=INFO msg="hybridctx decision" event.type=offload_decision event.sequence=1 event.run_id=run-1 event.agent_id=triage event.depth=0 event.diagnostics.operation=offload event.diagnostics.outcome=inline event.diagnostics.content=tool_result event.diagnostics.reason=below_threshold event.diagnostics.configured_bytes=100 event.diagnostics.input_bytes=9 event.diagnostics.observed_bytes=9 event.diagnostics.output_bytes=9
	// level=INFO msg="hybridctx decision" event.type=offload_decision event.sequence=2 event.run_id=run-1 event.agent_id=triage event.depth=0 event.diagnostics.operation=offload event.diagnostics.outcome=offloaded event.diagnostics.content=tool_result event.diagnostics.reason=threshold_exceeded event.diagnostics.configured_bytes=100 event.diagnostics.input_bytes=10000 event.diagnostics.observed_bytes=10000 event.diagnostics.output_bytes=82 event.diagnostics.reference=artifact://sha256/e4ee97ec252749d2096447e849628d0d7734f51700416eefbb33574bf0b3ee75
	// 2 1 1 9918 9
}
