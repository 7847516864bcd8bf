//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 but still spoken by clients and servers of the versions before; the gateway routes them (docs/gateway.md).

package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxToolsPerServer is the most tools one server may expose through the
// gateway (after its tools and disabledTools lists): a server that lists
// more is not served, and the log says to name the tools it needs.
const MaxToolsPerServer = 1000

// ErrTooManyTools means a server lists more than MaxToolsPerServer tools.
var ErrTooManyTools = errors.New("the server lists too many tools")

// sync reads the upstream's tools, prompts, resources and templates and
// registers them under their exposed names, withdrawing what it no longer
// lists.
func (u *upstream) sync(ctx context.Context, cs *mcp.ClientSession) error {
	caps := &mcp.ServerCapabilities{}
	if r := cs.InitializeResult(); r != nil && r.Capabilities != nil {
		caps = r.Capabilities
	}
	if caps.Tools != nil {
		if err := u.syncTools(ctx, cs); err != nil {
			return err
		}
	}
	if caps.Prompts != nil {
		if err := u.syncPrompts(ctx, cs); err != nil {
			return err
		}
	}
	if caps.Resources != nil {
		return u.syncResources(ctx, cs)
	}
	return nil
}

func (u *upstream) syncTools(ctx context.Context, cs *mcp.ClientSession) error {
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		if t == nil || !u.cfg.Allowed(t.Name) {
			continue
		}
		if len(tools) == MaxToolsPerServer {
			return fmt.Errorf("%w: server %q lists more than %d; name the ones to expose in its hybridctx.tools", ErrTooManyTools, u.cfg.Name, MaxToolsPerServer)
		}
		tools = append(tools, t)
	}
	g := u.g
	keep := map[string]bool{}
	for _, t := range tools {
		exposed, err := g.tools.name(u.cfg, t.Name)
		if err != nil {
			return err
		}
		if exposed != t.Name && exposed != cutName(u.cfg.Prefix)+Separator+t.Name {
			g.logf(slog.LevelWarn, "hybridctx gateway: tool name shortened", "server", u.cfg.Name, "tool", t.Name, "exposed", exposed)
		}
		keep[exposed] = true
		r := &route{up: u, name: t.Name, deref: u.cfg.Dereference.Applies(t.Name), tool: t}
		def := &mcp.Tool{Name: exposed, Title: t.Title, Description: fromServer(u.cfg.Name, t.Description),
			InputSchema: t.InputSchema, Annotations: t.Annotations, Icons: t.Icons}
		if def.InputSchema == nil {
			def.InputSchema = map[string]any{"type": "object"}
		}
		if r.deref {
			def.Description += " " + DereferenceSentence
		}
		g.mu.Lock()
		g.routes[exposed] = r
		g.mu.Unlock()
		g.server.AddTool(def, u.callTool(exposed, r))
	}
	if gone := u.replace(&u.tools, keep); len(gone) > 0 {
		g.server.RemoveTools(gone...)
	}
	return nil
}

func (u *upstream) syncPrompts(ctx context.Context, cs *mcp.ClientSession) error {
	g := u.g
	keep := map[string]bool{}
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			return err
		}
		if p == nil {
			continue
		}
		exposed, err := g.prompts.name(u.cfg, p.Name)
		if err != nil {
			return err
		}
		keep[exposed] = true
		r := &route{up: u, name: p.Name}
		g.mu.Lock()
		g.promptsTo[exposed] = r
		g.mu.Unlock()
		def := &mcp.Prompt{Name: exposed, Title: p.Title, Description: fromServer(u.cfg.Name, p.Description), Arguments: p.Arguments, Icons: p.Icons}
		g.server.AddPrompt(def, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			mrtr := ss != nil && multiRoundTrip(ss)
			if mrtr && req.Params.RequestState != "" {
				return promptRound(g.inputs.resume(ctx, ss, "prompts/get "+exposed, req.Params.RequestState, req.Params.InputResponses))
			}
			cs := u.session()
			if cs == nil {
				return nil, fmt.Errorf("hybridctx: the MCP server %q is not running", u.cfg.Name)
			}
			p := &mcp.GetPromptParams{Name: r.name, Arguments: req.Params.Arguments, Meta: forwardMeta(req.Params.Meta)}
			if !mrtr {
				if ss != nil {
					defer u.serving(ctx, ss, nil)()
				}
				return cs.GetPrompt(ctx, p)
			}
			return promptRound(g.inputs.start(ctx, g, ss, "prompts/get "+exposed, func(ctx context.Context, rt *roundTrip) (mcp.Result, error) {
				defer u.serving(ctx, ss, rt)()
				return cs.GetPrompt(ctx, p)
			}))
		})
	}
	if gone := u.replace(&u.prompts, keep); len(gone) > 0 {
		g.server.RemovePrompts(gone...)
	}
	return nil
}

// syncResources registers the upstream in the URI table: a URI (or URI
// template) two servers list is read from the first of them in config
// order that is running (docs/gateway.md).
func (u *upstream) syncResources(ctx context.Context, cs *mcp.ClientSession) error {
	var uris, tmpls []string
	var defs []*mcp.Resource
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return err
		}
		if r == nil || strings.HasPrefix(r.URI, "artifact:") {
			continue
		}
		uris = append(uris, r.URI)
		defs = append(defs, r)
	}
	var tdefs []*mcp.ResourceTemplate
	for t, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			break // a server without templates may answer an error
		}
		if t == nil || strings.HasPrefix(t.URITemplate, "artifact:") {
			continue
		}
		tmpls = append(tmpls, t.URITemplate)
		tdefs = append(tdefs, t)
	}
	u.mu.Lock()
	oldU, oldT := u.uris, u.tmpls
	u.uris, u.tmpls = uris, tmpls
	u.mu.Unlock()
	g := u.g
	g.withdrawResources(u, oldU, oldT)
	g.mu.Lock()
	var addR []*mcp.Resource
	var addT []*mcp.ResourceTemplate
	for _, r := range defs {
		if len(g.resources[r.URI]) == 0 {
			addR = append(addR, r)
		}
		g.resources[r.URI] = insertOrdered(g.resources[r.URI], u)
	}
	for _, t := range tdefs {
		if len(g.templates[t.URITemplate]) == 0 {
			addT = append(addT, t)
		}
		g.templates[t.URITemplate] = insertOrdered(g.templates[t.URITemplate], u)
	}
	g.mu.Unlock()
	for _, r := range addR {
		g.server.AddResource(r, g.readResource)
	}
	for _, t := range addT {
		g.server.AddResourceTemplate(t, g.readResource)
	}
	return nil
}

func insertOrdered(list []*upstream, u *upstream) []*upstream {
	for _, x := range list {
		if x == u {
			return list
		}
	}
	i := 0
	for i < len(list) && list[i].index < u.index {
		i++
	}
	return append(list[:i], append([]*upstream{u}, list[i:]...)...)
}

// withdrawResources takes u out of the URI tables; a URI no server lists
// any more leaves the resource list.
func (g *Gateway) withdrawResources(u *upstream, uris, tmpls []string) {
	var goneR, goneT []string
	g.mu.Lock()
	for _, uri := range uris {
		if g.resources[uri] = without(g.resources[uri], u); len(g.resources[uri]) == 0 {
			delete(g.resources, uri)
			goneR = append(goneR, uri)
		}
	}
	for _, t := range tmpls {
		if g.templates[t] = without(g.templates[t], u); len(g.templates[t]) == 0 {
			delete(g.templates, t)
			goneT = append(goneT, t)
		}
	}
	g.mu.Unlock()
	if len(goneR) > 0 {
		g.server.RemoveResources(goneR...)
	}
	if len(goneT) > 0 {
		g.server.RemoveResourceTemplates(goneT...)
	}
}

func without(list []*upstream, u *upstream) []*upstream {
	out := list[:0:0]
	for _, x := range list {
		if x != u {
			out = append(out, x)
		}
	}
	return out
}

// readResource reads a URI from the first running server, in config
// order, that lists it (or one of whose templates it came from).
func (g *Gateway) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	ss, _ := req.GetSession().(*mcp.ServerSession)
	mrtr := ss != nil && multiRoundTrip(ss)
	if mrtr && req.Params.RequestState != "" {
		return readRound(g.inputs.resume(ctx, ss, "resources/read "+uri, req.Params.RequestState, req.Params.InputResponses))
	}
	u := g.resourceServer(uri)
	var cs *mcp.ClientSession
	if u != nil {
		cs = u.session()
	}
	if cs == nil { // none serves it, or the one that did just went down
		return nil, mcp.ResourceNotFoundError(uri)
	}
	p := &mcp.ReadResourceParams{URI: uri, Meta: forwardMeta(req.Params.Meta)}
	if !mrtr {
		if ss != nil {
			defer u.serving(ctx, ss, nil)()
		}
		return cs.ReadResource(ctx, p)
	}
	return readRound(g.inputs.start(ctx, g, ss, "resources/read "+uri, func(ctx context.Context, rt *roundTrip) (mcp.Result, error) {
		defer u.serving(ctx, ss, rt)()
		return cs.ReadResource(ctx, p)
	}))
}

// replace sets *names, one of u's lists of registered names, to keep's
// names and returns those it held that keep lacks: what to unregister.
func (u *upstream) replace(names *[]string, keep map[string]bool) (gone []string) {
	now := make([]string, 0, len(keep))
	for n := range keep {
		now = append(now, n)
	}
	u.mu.Lock()
	old := *names
	*names = now
	u.mu.Unlock()
	for _, n := range old {
		if !keep[n] {
			gone = append(gone, n)
		}
	}
	return gone
}

// complete routes a completion request to the server of the prompt or
// resource template it names.
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	p := *req.Params
	var u *upstream
	g.mu.Lock()
	if ref != nil && ref.Type == "ref/prompt" {
		if r := g.promptsTo[ref.Name]; r != nil {
			u = r.up
			r2 := *ref
			r2.Name = r.name
			p.Ref = &r2
		}
	} else if ref != nil {
		for _, x := range g.templates[ref.URI] {
			if x.session() != nil {
				u = x
				break
			}
		}
	}
	g.mu.Unlock()
	if u == nil || u.session() == nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	return u.session().Complete(ctx, &p)
}

// setRoots replaces the roots the upstream's client offers.
func (u *upstream) setRoots(roots []*mcp.Root) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cl.RemoveRoots(u.rootURIs...)
	u.rootURIs = u.rootURIs[:0]
	for _, r := range roots {
		u.rootURIs = append(u.rootURIs, r.URI)
	}
	u.cl.AddRoots(roots...)
}
