// Package adaptkit is what the adapter modules under adapters/ share: the
// decision of one tool result into the text the model sees, the categorical
// tool-failure notice, and the read tools behind one SDK-neutral surface.
// Each adapter only translates between its library's types and these.
package adaptkit

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/readtools"
)

// ToolFailedNotice is what the model sees in place of a tool's error: the
// error's own text may name paths, hosts or secrets, so it stays with the
// host.
const ToolFailedNotice = "hybridctx: the tool failed; its error is kept out of this conversation. The call may be retried."

// ErrNilOffloader is wrapped by errors about a missing Offloader.
var ErrNilOffloader = errors.New("hybridctx adapter: nil offloader")

// ErrNilRehydrator is returned for a missing Rehydrator.
var ErrNilRehydrator = readtools.ErrNilRehydrator

// Result is what the model sees of one tool call.
type Result struct {
	// Text is the content when inline, the bounded notice when stored, a
	// categorical notice otherwise.
	Text string
	// IsError marks a failed decision or a failed tool.
	IsError bool
	// Offload is the decision, for the host; nil when the tool failed.
	Offload *hybridctx.OffloadResult
}

// Failed is the result of a tool that returned an error.
func Failed() Result { return Result{Text: ToolFailedNotice, IsError: true} }

// Decide makes the offload decision for one tool result. The error is
// non-nil only for a cancelled context; a result that cannot be decided
// (one encoding/json cannot encode, a failing stream) becomes the
// categorical failure.
func Decide(ctx context.Context, off *hybridctx.Offloader, call hybridctx.Call, result any) (Result, error) {
	out, err := off.Offload(ctx, call, result)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Failed(), nil
	}
	oc := out.Outcome()
	return Result{Text: out.Text(), IsError: oc == hybridctx.Failed || oc == hybridctx.RecoveryRequired, Offload: out}, nil
}

// RawArgs returns v as JSON arguments: json.RawMessage, []byte and string
// as they are (an empty one as {}), anything else encoded.
func RawArgs(v any) json.RawMessage {
	switch a := v.(type) {
	case nil:
		return json.RawMessage(`{}`)
	case json.RawMessage:
		if len(a) == 0 {
			return json.RawMessage(`{}`)
		}
		return a
	case []byte:
		if len(a) == 0 {
			return json.RawMessage(`{}`)
		}
		return a
	case string:
		if a == "" {
			return json.RawMessage(`{}`)
		}
		return json.RawMessage(a)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}
