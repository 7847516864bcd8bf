// Package sink provides progress event sinks for hybridctx reporters: a
// channel, JSON Lines on any writer, log/slog records, and a run Summary
// (counts and byte totals); package sink/otelsink adds OpenTelemetry
// metrics. Sinks are best effort: the reporter hands their errors to its
// OnSinkError and never to a decision.
package sink

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/hybridctx/hybridctx"
)

// ErrFull means a Channel sink dropped an event because its channel was full.
var ErrFull = errors.New("event channel full")

// Channel sends each event on C without blocking; when C is full the event
// is dropped and ErrFull returned.
type Channel struct {
	C chan<- *hybridctx.Event
}

// Emit implements hybridctx.Sink.
func (c Channel) Emit(_ context.Context, e *hybridctx.Event) error {
	select {
	case c.C <- e:
		return nil
	default:
		return ErrFull
	}
}

// JSONLines writes each event as one JSON object and a newline, in a single
// Write call, so several processes appending to one file (opened with
// O_APPEND) never interleave their lines.
type JSONLines struct {
	mu sync.Mutex
	w  io.Writer
}

// NewJSONLines returns a sink writing to w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: w} }

// Emit implements hybridctx.Sink.
func (j *JSONLines) Emit(_ context.Context, e *hybridctx.Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err = j.w.Write(b)
	return err
}
