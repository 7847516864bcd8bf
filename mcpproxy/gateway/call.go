package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy"
)

// DereferenceSentence is what the description of a tool that takes
// references gains (docs/gateway.md).
const DereferenceSentence = "Any argument may be given as a reference artifact://sha256/<hex> (exactly that string) in place of its content: the gateway passes the stored content to the tool."

var calls atomic.Uint64

// callTool forwards a call to the upstream: its arguments' references
// replaced by their bodies where the tool allows it, the client's progress
// token mapped, and the result bounded as the single proxy bounds it.
func (u *upstream) callTool(exposed string, r *route) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && multiRoundTrip(ss) && req.Params.RequestState != "" {
			return toolRound(u.g.inputs.resume(ctx, ss, "tools/call "+exposed, req.Params.RequestState, req.Params.InputResponses))
		}
		cs := u.session()
		if cs == nil {
			return toolError(fmt.Sprintf("hybridctx: the MCP server %q is not running; it is being restarted. Try again later.", u.cfg.Name)), nil
		}
		args := req.Params.Arguments
		if r.deref {
			var refusal *mcp.CallToolResult
			if args, refusal = u.g.dereference(ctx, r, args); refusal != nil {
				return refusal, nil
			}
		}
		p := &mcp.CallToolParams{Name: r.name, Meta: forwardMeta(req.Params.Meta)}
		if len(args) > 0 {
			p.Arguments = args
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss != nil && multiRoundTrip(ss) {
			tok := req.Params.GetProgressToken()
			return toolRound(u.g.inputs.start(ctx, u.g, ss, "tools/call "+exposed, func(ctx context.Context, rt *roundTrip) (mcp.Result, error) {
				return u.forward(ctx, ss, rt, exposed, cs, p, tok)
			}))
		}
		return u.forward(ctx, ss, nil, exposed, cs, p, req.Params.GetProgressToken())
	}
}

// forward makes one call upstream for the client session ss (nil: none):
// the client's progress token mapped, what the server asks during the
// call routed to ss (through rt for a client on multi-round-trip
// requests), the result bounded.
func (u *upstream) forward(ctx context.Context, ss *mcp.ServerSession, rt *roundTrip, exposed string, cs *mcp.ClientSession, p *mcp.CallToolParams, tok any) (*mcp.CallToolResult, error) {
	if tok != nil && ss != nil {
		key := u.g.mapProgress(ctx, ss, tok)
		defer u.g.unmapProgress(key)
		meta := mcp.Meta{}
		for k, v := range p.Meta {
			meta[k] = v
		}
		p.Meta = meta
		p.SetProgressToken(key)
	}
	if ss != nil {
		defer u.serving(ctx, ss, rt)()
	}
	taken := &takenResult{}
	_, err := cs.CallTool(withTaken(ctx, taken), p)
	raw := taken.result()
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return nil, we
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return toolError(fmt.Sprintf("hybridctx: the MCP server %q stopped before it answered; it is being restarted.", u.cfg.Name)), nil
	}
	if len(raw) == 0 { // a response with neither a result nor an error
		return u.malformedResult(), nil
	}
	call := hybridctx.Call{Tool: artifact.TruncateUTF8(exposed, artifact.MaxCallFieldLen), ID: "gw-" + strconv.FormatUint(calls.Add(1), 10)}
	return u.bound(ctx, call, raw)
}

// malformedResult answers a call whose server answered a result that is
// not a tools/call result.
func (u *upstream) malformedResult() *mcp.CallToolResult {
	return toolError(fmt.Sprintf("hybridctx: the MCP server %q answered a malformed tools/call result.", u.cfg.Name))
}

// bound bounds a result as the server encoded it (the wire took it, so the
// SDK decoded nothing of it) with the middleware's bound, and decodes what
// the client receives: a large result is never decoded whole and encoded
// again (docs/gateway.md, Limits).
func (u *upstream) bound(ctx context.Context, call hybridctx.Call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	if r := u.g.opts.Reporter; r != nil && hybridctx.ReporterFrom(ctx) == nil {
		ctx = hybridctx.WithReporter(ctx, r)
	}
	out, err := mcpproxy.BoundResult(ctx, u.off, call, raw, nil)
	if err != nil {
		return nil, err
	}
	var res mcp.CallToolResult
	if json.Unmarshal(out, &res) != nil {
		return u.malformedResult(), nil
	}
	return &res, nil
}

// reservedMeta is the prefix of the _meta keys the protocol itself sets
// on a request (protocol version, client info, capabilities, log level).
const reservedMeta = "io.modelcontextprotocol/"

// forwardMeta is the client's _meta a call carries upstream: its own keys,
// without the protocol's, which describe the client's session with the
// gateway and not the gateway's with the server (a server of another
// protocol version refuses the call).
func forwardMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, reservedMeta) {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// mapProgress gives a client call's progress token one of the gateway's,
// routed back to that call until unmapProgress: the upstream's wire
// delivers every notification the server wrote before its result, so a
// token is unmapped once the result is in (docs/gateway.md).
func (g *Gateway) mapProgress(ctx context.Context, ss *mcp.ServerSession, tok any) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextToken++
	key := "hx-" + strconv.FormatUint(g.nextToken, 10)
	g.progress[key] = progressRoute{ctx: ctx, ss: ss, token: tok}
	return key
}

func (g *Gateway) unmapProgress(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.progress, key)
}

// dereference replaces every top-level argument whose value is exactly
// one canonical reference by the body it names (docs/gateway.md): an
// explicit rehydration with the usual checks, budget the dereference
// budget, one event each (reason tool_argument). Any other outcome returns
// a categorical tool error, and the call is not forwarded.
func (g *Gateway) dereference(ctx context.Context, r *route, args json.RawMessage) (json.RawMessage, *mcp.CallToolResult) {
	if !bytes.Contains(args, []byte("artifact:")) {
		return args, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil {
		return args, nil // not an object: the upstream answers
	}
	if g.opts.Reporter != nil {
		ctx = hybridctx.WithReporter(ctx, g.opts.Reporter)
	}
	changed := false
	for k, v := range obj {
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			continue
		}
		ref, err := artifact.ParseRef(s)
		if err != nil || ref.String() != s {
			continue // never a reference inside a longer string
		}
		rh, err := g.reh.Rehydrate(ctx, hybridctx.Request{Reference: s, Budget: g.derefMax, ToolArgument: true})
		if err != nil {
			return nil, toolError(fmt.Sprintf("hybridctx: the reference in argument %q could not be read (%s); the tool was not called.", k, category(err)))
		}
		if rh.Outcome() != hybridctx.Resolved {
			return nil, toolError(refusal(k, rh, g.derefMax))
		}
		body := rh.Segment.Bytes()
		var val any
		switch {
		case utf8.Valid(body):
			val = string(body)
		case schemaSaysBase64(r.tool, k):
			val = base64.StdEncoding.EncodeToString(body)
		default:
			return nil, toolError(fmt.Sprintf("hybridctx: unsupported_kind: the reference in argument %q names a binary body, and the tool's schema does not take base64 there; the tool was not called.", k))
		}
		enc, err := json.Marshal(val)
		if err != nil {
			return nil, toolError("hybridctx: internal error; the tool was not called.")
		}
		obj[k] = enc
		changed = true
	}
	if !changed {
		return args, nil
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, toolError("hybridctx: internal error; the tool was not called.")
	}
	return out, nil
}

// refusal says why a reference argument was not replaced, by outcome.
func refusal(arg string, rh *hybridctx.Rehydration, budget int64) string {
	o := rh.Outcome()
	what := ""
	switch o {
	case hybridctx.OverBudget:
		what = fmt.Sprintf(" The body is %d bytes; at most %d may be passed by reference.", rh.BodySize, budget)
	case hybridctx.Unauthorized:
		what = " This conversation holds no such stored result."
	case hybridctx.Missing, hybridctx.Stale:
		what = " The stored body is gone or damaged."
	}
	return fmt.Sprintf("hybridctx: %s: the reference in argument %q was not passed to the tool, which was not called.%s", o, arg, what)
}

// schemaSaysBase64 reports whether the tool's input schema gives the
// property contentEncoding "base64".
func schemaSaysBase64(t *mcp.Tool, prop string) bool {
	if t == nil || t.InputSchema == nil {
		return false
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return false
	}
	var s struct {
		Properties map[string]struct {
			ContentEncoding string `json:"contentEncoding"`
		} `json:"properties"`
	}
	return json.Unmarshal(raw, &s) == nil && s.Properties[prop].ContentEncoding == "base64"
}
