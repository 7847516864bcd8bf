// Package mcpgo adapts hybridctx to mcp-go servers
// (github.com/mark3labs/mcp-go): Middleware bounds every tool result the
// way the MCP proxy does (a stored block becomes the bounded notice and a
// resource_link), and AddReadTools registers the read tools and the
// artifact://sha256/{hex} resource template.
//
// It lives in its own module so that the hybridctx core does not depend on
// mcp-go.
package mcpgo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/adapters/internal/adaptkit"
	"github.com/hybridctx/hybridctx/mcpblock"
	"github.com/hybridctx/hybridctx/mcpproxy"
	"github.com/hybridctx/hybridctx/readtools"
)

// MIME types of the payloads the middleware stores.
const (
	mimeText   = mcpblock.MIMEText
	mimeJSON   = mcpblock.MIMEJSON
	mimeBinary = mcpblock.MIMEBinary
)

// Options configure the middleware and the read tools. A nil *Options
// means defaults.
type Options struct {
	// Budget caps every read; 0 means the read tools' default.
	Budget int64
	// Names overrides the read tools' names in AddReadTools; empty names
	// keep the defaults. They must be the names the Offloader's policy
	// gives, readtools.NamesOf(off.Policy()), which the notices point to.
	Names readtools.Names
	// OnDecision, when set, receives every offload decision with the tool
	// name it decided, for the host (the model sees only the notice). It
	// runs on the tool-call goroutine.
	OnDecision func(ctx context.Context, tool string, out *hybridctx.OffloadResult)
}

// readSlot lets the read tools mark their own results, through the call's
// context, so the middleware passes them unchanged (recovered content is
// never offloaded again).
type readSlot struct{ read bool }

type slotKey struct{}

func markRead(ctx context.Context) {
	if s, ok := ctx.Value(slotKey{}).(*readSlot); ok {
		s.read = true
	}
}

// Middleware returns a tool handler middleware that bounds every result:
//
//	s := server.NewMCPServer(name, version, server.WithToolHandlerMiddleware(mcpgo.Middleware(off, nil)))
//
// Each content block (text, image, audio, embedded resource; any other
// block as its JSON), the structuredContent and an oversized _meta are
// decided with off, one decision each; a stored payload is replaced by the
// bounded notice and a resource_link to its artifact:// URI, stored
// structuredContent and _meta are removed, a failed decision leaves the
// categorical notice. Then the whole result, as encoded for the client, is
// held within the policy's ResultBound + 1 KiB, exactly as the MCP proxy
// does (mcpproxy.BoundResult; docs/mcp-proxy.md, "The whole-result bound"). Results of the read tools registered by
// AddReadTools pass unchanged. A handler's error becomes an isError result
// holding the categorical failure notice, never the error's text (a
// cancelled context stays an error). off must not be nil.
func Middleware(off *hybridctx.Offloader, opts *Options) server.ToolHandlerMiddleware {
	if off == nil {
		panic("mcpgo.Middleware: nil Offloader")
	}
	var hook func(context.Context, string, *hybridctx.OffloadResult)
	if opts != nil {
		hook = opts.OnDecision
	}
	var calls atomic.Uint64
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			slot := &readSlot{}
			res, err := next(context.WithValue(ctx, slotKey{}, slot), req)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				f := adaptkit.Failed()
				return mcp.NewToolResultError(f.Text), nil
			}
			if res == nil || slot.read {
				return res, nil
			}
			call := hybridctx.Call{Tool: req.Params.Name, ID: "call-" + strconv.FormatUint(calls.Add(1), 10)}
			return bound(ctx, off, call, hook, res)
		}
	}
}

// bound returns res bounded as the MCP proxy bounds a result on the wire
// (mcpproxy.BoundResult): encoded as the client receives it, each payload
// decided, then the whole-result bound, structuredContent and _meta
// counted. res itself when nothing changed; res is never modified. A store
// that could make no decision (other than a cancelled context) leaves the
// categorical failure notice.
func bound(ctx context.Context, off *hybridctx.Offloader, call hybridctx.Call, hook func(context.Context, string, *hybridctx.OffloadResult), res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("mcpgo: encoding a result: %w", err)
	}
	var opts *mcpproxy.BoundOptions
	if hook != nil {
		opts = &mcpproxy.BoundOptions{OnDecision: func(out *hybridctx.OffloadResult) { hook(ctx, call.Tool, out) }}
	}
	out, err := mcpproxy.BoundResult(ctx, off, call, raw, opts)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		f := adaptkit.Failed()
		return mcp.NewToolResultError(f.Text), nil
	case len(out) == len(raw) && &out[0] == &raw[0]:
		return res, nil
	}
	var r2 mcp.CallToolResult
	if err := json.Unmarshal(out, &r2); err != nil {
		return nil, fmt.Errorf("mcpgo: decoding a bounded result: %w", err)
	}
	return &r2, nil
}
