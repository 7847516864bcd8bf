// Package otelsink is a hybridctx progress sink that records OpenTelemetry
// metrics. It depends on the OpenTelemetry API only; the host chooses the
// SDK and exporter through the MeterProvider it passes.
//
// Every measurement carries the categorical attributes operation, outcome,
// reason and content, and nothing else: no run or agent id (unbounded
// cardinality), and never content, a path, an owner, a tool name, a call id
// or a reference.
//
// # Instruments
//
//	hybridctx.decisions                 counter, {decision}: one per event
//	hybridctx.decision.observed_bytes   histogram, By: the observed bytes of
//	                                    decisions that have them
//	hybridctx.context.kept_bytes        counter, By: bytes kept out of the
//	                                    conversation (sink.KeptOutOfContext)
//	hybridctx.rehydrated_bytes          counter, By: bytes returned by
//	                                    resolved rehydrations
package otelsink

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/sink"
)

// ScopeName is the instrumentation scope of the sink's meter.
const ScopeName = "github.com/hybridctx/hybridctx/sink/otelsink"

// Instrument names.
const (
	MetricDecisions     = "hybridctx.decisions"
	MetricObservedBytes = "hybridctx.decision.observed_bytes"
	MetricKeptBytes     = "hybridctx.context.kept_bytes"
	MetricRehydrated    = "hybridctx.rehydrated_bytes"
)

// Attribute keys, the only ones the sink records.
const (
	KeyOperation = attribute.Key("operation")
	KeyOutcome   = attribute.Key("outcome")
	KeyReason    = attribute.Key("reason")
	KeyContent   = attribute.Key("content")
)

// BucketBoundaries are the observed-bytes histogram's boundaries: powers of
// four from 256 bytes to 1 GiB.
var BucketBoundaries = []float64{0, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10,
	1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30}

// ErrNilMeterProvider is returned by New for a nil provider.
var ErrNilMeterProvider = errors.New("otelsink: nil meter provider")

const (
	numOutcomes = hybridctx.NumOutcomes
	numReasons  = hybridctx.NumReasons
	numContents = int(hybridctx.RecoveredContext) + 1
)

// Sink records metrics for each event. It is safe for concurrent use.
type Sink struct {
	decisions  metric.Int64Counter
	observed   metric.Int64Histogram
	kept       metric.Int64Counter
	rehydrated metric.Int64Counter
	// attrs holds one prebuilt attribute set per category triple, so that
	// recording allocates nothing.
	attrs [numOutcomes][numReasons][numContents]metric.MeasurementOption
}

// New returns a sink recording through a meter of mp.
func New(mp metric.MeterProvider) (*Sink, error) {
	if mp == nil {
		return nil, ErrNilMeterProvider
	}
	m := mp.Meter(ScopeName)
	s := &Sink{}
	var errs [4]error
	s.decisions, errs[0] = m.Int64Counter(MetricDecisions, metric.WithUnit("{decision}"),
		metric.WithDescription("Offload and rehydration decisions."))
	s.observed, errs[1] = m.Int64Histogram(MetricObservedBytes, metric.WithUnit("By"),
		metric.WithDescription("Bytes each decision observed: the result's size, or the requested range."),
		metric.WithExplicitBucketBoundaries(BucketBoundaries...))
	s.kept, errs[2] = m.Int64Counter(MetricKeptBytes, metric.WithUnit("By"),
		metric.WithDescription("Bytes of tool results kept out of the conversation, net of the references."))
	s.rehydrated, errs[3] = m.Int64Counter(MetricRehydrated, metric.WithUnit("By"),
		metric.WithDescription("Bytes returned by resolved rehydrations."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	for o := range numOutcomes {
		for r := range numReasons {
			for c := range numContents {
				oc := hybridctx.Outcome(o)
				if !hybridctx.ValidPair(oc, hybridctx.Reason(r)) || c == 0 {
					continue
				}
				s.attrs[o][r][c] = metric.WithAttributeSet(attribute.NewSet(
					KeyOperation.String(oc.Operation().String()),
					KeyOutcome.String(oc.String()),
					KeyReason.String(hybridctx.Reason(r).String()),
					KeyContent.String(hybridctx.Content(c).String()),
				))
			}
		}
	}
	return s, nil
}

// Emit implements hybridctx.Sink. Events without diagnostics, or with
// categories outside the closed tables, are ignored.
func (s *Sink) Emit(ctx context.Context, e *hybridctx.Event) error {
	d := e.Diagnostics
	if d == nil {
		return nil
	}
	o, r, c := int(d.Outcome()), int(d.Reason()), int(d.Content())
	if o >= numOutcomes || r >= numReasons || c >= numContents || s.attrs[o][r][c] == nil {
		return nil
	}
	attrs := s.attrs[o][r][c]
	s.decisions.Add(ctx, 1, attrs)
	if n, ok := d.ObservedBytes(); ok {
		s.observed.Record(ctx, n, attrs)
	}
	if n := sink.KeptOutOfContext(d); n > 0 {
		s.kept.Add(ctx, n, attrs)
	}
	if d.Outcome() == hybridctx.Resolved {
		if _, out, ok := d.Attribution(); ok {
			s.rehydrated.Add(ctx, out, attrs)
		}
	}
	return nil
}
