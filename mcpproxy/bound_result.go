package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
)

// The bound for hosts that serve results themselves, over the one bounder
// (package internal/bound) the proxy and Middleware use.

// BoundOptions configure BoundResult. A nil *BoundOptions means defaults.
type BoundOptions struct {
	// OnDecision, when set, receives every offload decision BoundResult
	// makes (each payload's, and the fold's), on the calling goroutine.
	OnDecision func(*hybridctx.OffloadResult)
}

// BoundResult bounds one tools/call result, its JSON as the client would
// receive it, with off, exactly as the proxy and Middleware do: each
// payload decided on its own, then the whole-result bound
// (docs/mcp-proxy.md). It is for servers built on another MCP library
// (adapters/mcpgo). It returns result itself when nothing was stored,
// failed or folded; the error is non-nil only when no decision could be
// made (a cancelled context, a call that cannot be recorded). off must not
// be nil.
func BoundResult(ctx context.Context, off *hybridctx.Offloader, call hybridctx.Call, result json.RawMessage, opts *BoundOptions) (json.RawMessage, error) {
	b := &bound.Bounder{Off: off}
	if opts != nil {
		b.OnDecision = opts.OnDecision
	}
	return b.Encoded(ctx, call, result)
}

// BoundToolResult bounds one typed tools/call result exactly as Middleware does —
// every oversized block offloaded with off, then the whole-result bound —
// for a host that calls the tool itself and serves its result (the
// gateway, docs/gateway.md). call names the tool and the call in the
// record. It never modifies res; it returns res itself when nothing was
// stored or failed. Read-tool results must not be passed: they are
// recovered content.
func BoundToolResult(ctx context.Context, off *hybridctx.Offloader, call hybridctx.Call, res *mcp.CallToolResult, opts *Options) (*mcp.CallToolResult, error) {
	if off == nil || res == nil {
		return nil, errors.New("mcpproxy: BoundToolResult needs an Offloader and a result")
	}
	b := &bound.Bounder{Off: off, Reporter: opts.reporter()}
	return b.Typed(ctx, call, res)
}
