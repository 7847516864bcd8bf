package otelsink_test

import (
	"context"
	"fmt"
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/sink/otelsink"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

func Example() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	metrics, _ := otelsink.New(provider)

	mem := memstore.New()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}, workspace.New(mem, mem))
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 100}, nil)
	ctx = hybridctx.WithReporter(ctx, hybridctx.NewReporter(hybridctx.ReporterOptions{Sinks: []hybridctx.Sink{metrics}}))
	_, _ = off.Offload(ctx, hybridctx.Call{}, strings.Repeat("x", 10000))

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(ctx, &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			p := sum.DataPoints[0]
			outcome, _ := p.Attributes.Value(otelsink.KeyOutcome)
			fmt.Println(m.Name, outcome.AsString(), p.Value)
		}
	}
	// Output:
	// hybridctx.decisions offloaded 1
	// hybridctx.context.kept_bytes offloaded 9918
}
