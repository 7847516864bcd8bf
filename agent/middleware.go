package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hybridctx/hybridctx"
)

// ErrToolFailed wraps the error a tool body returned. The middleware passes
// tool errors through untouched: they are not tool results and are never
// offloaded. errors.Is and errors.As still reach the tool's own error.
var ErrToolFailed = errors.New("tool failed")

// ErrNilOffloader is returned by NewMiddleware for a nil Offloader.
var ErrNilOffloader = errors.New("agent: nil offloader")

// Middleware sends tool results through one Offloader, that is, through the
// host's binding and policy. It is safe for concurrent use.
type Middleware struct {
	off *hybridctx.Offloader
}

// NewMiddleware returns a middleware deciding results with off.
func NewMiddleware(off *hybridctx.Offloader) (*Middleware, error) {
	if off == nil {
		return nil, ErrNilOffloader
	}
	return &Middleware{off: off}, nil
}

// Offloader returns the middleware's offloader.
func (m *Middleware) Offloader() *hybridctx.Offloader { return m.off }

// Call runs tool with args and decides its result. The returned Offload
// holds what the model must see (Offload.Text: the content when inline, the
// bounded reference notice when stored, the categorical notice when failed)
// and the decision for the host. A *hybridctx.Segment result, such as the
// read tool's, is inlined whatever its size (recovered_segment_bypass).
//
// The error wraps hybridctx.ErrInvalidCall, before the tool runs, for a
// call that could not be recorded (hybridctx.Call.Validate); it wraps
// ErrToolFailed when the tool failed (no decision, no event), or is the
// Offloader's error when no decision could be made (a
// cancelled context, a result encoding/json cannot encode).
func (m *Middleware) Call(ctx context.Context, call hybridctx.Call, tool ToolFunc, args json.RawMessage) (*hybridctx.OffloadResult, error) {
	if tool == nil {
		return nil, fmt.Errorf("%w: no tool body", ErrToolFailed)
	}
	if err := call.Validate(); err != nil {
		return nil, err
	}
	result, err := tool(ctx, args)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrToolFailed, err)
	}
	return m.off.Offload(ctx, call, result)
}

// WrappedFunc is a tool wrapped by a Middleware: it takes the call id the
// model gave and returns the decision (see Middleware.Call).
type WrappedFunc func(ctx context.Context, callID string, args json.RawMessage) (*hybridctx.OffloadResult, error)

// Wrap returns tool as a WrappedFunc recording name as the tool name.
func (m *Middleware) Wrap(name string, tool ToolFunc) WrappedFunc {
	return func(ctx context.Context, callID string, args json.RawMessage) (*hybridctx.OffloadResult, error) {
		return m.Call(ctx, hybridctx.Call{Tool: name, ID: callID}, tool, args)
	}
}

// DecideParts decides the parts of one multi-part result (for example the
// content blocks of an MCP tool result) together: each part as Call would,
// then, when the parts kept inline total more than the policy's
// ResultBound, the largest of them are stored one by one until the rest
// fits (docs/mcp-proxy.md, "The whole-result bound"). It returns one decision per part, in order. The error
// is the Offloader's when no decision could be made; decisions made before
// it were reported.
func (m *Middleware) DecideParts(ctx context.Context, call hybridctx.Call, parts []any) ([]*hybridctx.OffloadResult, error) {
	out := make([]*hybridctx.OffloadResult, len(parts))
	sizes := make([]int64, len(parts))
	for i, p := range parts {
		d, err := m.off.Offload(ctx, call, p)
		if err != nil {
			return nil, err
		}
		out[i], sizes[i] = d, -1
		if d.Outcome() == hybridctx.Inline && d.Reason() == hybridctx.BelowThreshold {
			sizes[i], _ = d.Diagnostics().ObservedBytes()
		}
	}
	for _, i := range hybridctx.OverResultBound(sizes, m.off.Policy().ResultBound()) {
		d, err := m.off.Store(ctx, call, parts[i])
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}
