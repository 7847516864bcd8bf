package mcpproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
	"github.com/hybridctx/hybridctx/readtools"
)

// DefaultBudget is the read cap when Options.Budget is zero: the most bytes
// one read_artifact call or one resources/read returns.
const DefaultBudget = 65536

// ErrInvalidOptions is wrapped by errors about unusable options.
var ErrInvalidOptions = errors.New("invalid mcpproxy options")

// Options configure the middleware, the read tools and the proxy. A nil
// *Options means defaults.
type Options struct {
	// Budget caps every read: the budget of a read_artifact call is
	// min(max_bytes, Budget), and resources/read returns a body only when it
	// is at most Budget bytes. Zero means DefaultBudget.
	Budget int64
	// Names overrides the read tools' names; an empty name keeps the
	// Offloader's policy's (for AddReadTools, which has no Offloader, the
	// default). Middleware, AddReadTools and Proxy all name and recognise
	// the tools as readtools.NamesOf(Names.Over(policy)); the notices name
	// the policy's, so leave Names empty and set the names in the policy.
	Names readtools.Names
	// Reporter receives the progress events of the decisions made here
	// whenever a request's context carries no reporter of its own.
	Reporter hybridctx.Reporter
	// Logger, when set, receives one warning per message a Proxy drops or
	// refuses (a malformed line, a response that answers no request the
	// proxy forwarded): the side, a categorical reason and a running count,
	// never the message's content or id.
	Logger *slog.Logger
	// TempDir is where a Proxy spools a large message it cannot hold in
	// memory (a private file, removed as it is created, named with
	// driver.TempPrefix so that a directory workspace sweeps one left by a
	// killed process): pass the workspace's workspace.Store.TempDir. Empty
	// means os.TempDir() (the backends without a local temporary area:
	// memory, PostgreSQL, S3).
	TempDir string
}

func (o *Options) budget() (int64, error) {
	if o == nil || o.Budget == 0 {
		return DefaultBudget, nil
	}
	if o.Budget < 0 {
		return 0, fmt.Errorf("%w: budget must be > 0", ErrInvalidOptions)
	}
	return o.Budget, nil
}

func (o *Options) reporter() hybridctx.Reporter {
	if o == nil {
		return nil
	}
	return o.Reporter
}

func (o *Options) names() readtools.Names {
	if o == nil {
		return readtools.Names{}
	}
	return o.Names
}

// readNames returns the names the read tools go by with off and opts.
func readNames(off *hybridctx.Offloader, opts *Options) readtools.Names {
	return readtools.NamesOf(opts.names().Over(off.Policy()))
}

// Middleware returns a receiving middleware that bounds the results of a
// Go MCP server's tools:
//
//	server.AddReceivingMiddleware(mcpproxy.Middleware(off, nil))
//
// Every tools/call result is decided block by block with off (one decision
// per content block and one for structuredContent); a stored block is
// replaced by the bounded notice and a resource_link, and stored
// structuredContent is removed (the notice and link are appended to the
// content). Results of the read tools (named by off's policy and
// Options.Names, as AddReadTools names them) pass
// unchanged: they are recovered content. tools/list results lose their
// outputSchema, because a bounded result can no longer promise it (clients
// that validate it would reject the result). Register the read tool with
// AddReadTools so the model can follow the notice. off must not be nil.
//
// Memory: the middleware sees the result only as the decoded value the
// tool's handler returned, so it cannot stream it: a result of N bytes is
// in memory whole before the middleware runs, for as long as the handler
// and the SDK hold it. The whole-result bound weighs the result as the
// client receives it, so the middleware encodes it to JSON (one copy of its
// encoded size) and reads that as the proxy reads a long line: payloads over
// six times the threshold go into the offloader as they are read, the rest
// is bounded as on the wire; a result that changed is decoded back for the
// SDK, which then encodes and sends the bounded one.
// For flat memory whatever the result's size, run the server behind the
// proxy (hybridctx mcp), which streams the encoded result instead.
func Middleware(off *hybridctx.Offloader, opts *Options) mcp.Middleware {
	if off == nil {
		panic("mcpproxy.Middleware: nil Offloader")
	}
	b := &bound.Bounder{Off: off, Reporter: opts.reporter(), Nonce: bound.NewNonce()}
	reads := readNames(off, opts)
	var calls atomic.Uint64
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil || res == nil {
				return res, err
			}
			switch r := res.(type) {
			case *mcp.CallToolResult:
				if method != "tools/call" {
					return res, nil
				}
				var name string
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
					name = p.Name
				}
				if reads.Has(name) {
					return res, nil
				}
				call := hybridctx.Call{Tool: name, ID: "call-" + strconv.FormatUint(calls.Add(1), 10)}
				return b.Typed(ctx, call, r)
			case *mcp.ListToolsResult:
				return withoutOutputSchemas(r), nil
			}
			return res, nil
		}
	}
}

// withoutOutputSchemas returns r with every tool's outputSchema removed,
// copying what it changes (the server's own tools stay untouched).
func withoutOutputSchemas(r *mcp.ListToolsResult) *mcp.ListToolsResult {
	has := false
	for _, t := range r.Tools {
		if t != nil && t.OutputSchema != nil {
			has = true
			break
		}
	}
	if !has {
		return r
	}
	r2 := *r
	r2.Tools = make([]*mcp.Tool, len(r.Tools))
	for i, t := range r.Tools {
		if t != nil && t.OutputSchema != nil {
			t2 := *t
			t2.OutputSchema = nil
			t = &t2
		}
		r2.Tools[i] = t
	}
	return &r2
}

// AddReadTools registers on s the read tools of package readtools —
// read_artifact, search_artifact and query_artifact, named by Options.Names — and
// the resource template artifact://sha256/{hex}, all served by reh: the
// owner, digest and budget checks of an explicit rehydration, categorical
// outcomes as isError tool results (or JSON-RPC errors for resources/read),
// and resolved bytes as text when they are valid UTF-8, else as a base64
// blob in an embedded resource.
func AddReadTools(s *mcp.Server, reh *hybridctx.Rehydrator, opts *Options) error {
	r, err := newReader(reh, opts)
	if err != nil {
		return err
	}
	if err := r.setNames(opts.names()); err != nil {
		return err
	}
	for _, t := range r.toolDefs() {
		name := t.Name
		s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return r.callTool(ctx, name, req.Params.Arguments)
		})
	}
	s.AddResourceTemplate(r.templateDef(), func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return r.readResource(ctx, req.Params.URI)
	})
	return nil
}

// newReader validates reh and the options.
func newReader(reh *hybridctx.Rehydrator, opts *Options) (*reader, error) {
	if reh == nil {
		return nil, fmt.Errorf("%w: a Rehydrator is required", ErrInvalidOptions)
	}
	budget, err := opts.budget()
	if err != nil {
		return nil, err
	}
	return &reader{reh: reh, budget: budget, reporter: opts.reporter()}, nil
}
