package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resourceServer returns the first running server, in config order, that
// lists uri (or has templates, for a URI none lists), or nil.
func (g *Gateway) resourceServer(uri string) *upstream {
	g.mu.Lock()
	cands := append([]*upstream(nil), g.resources[uri]...)
	if len(cands) == 0 {
		for _, ups := range g.templates {
			for _, u := range ups {
				cands = insertOrdered(cands, u)
			}
		}
	}
	g.mu.Unlock()
	for _, u := range cands {
		if u.session() != nil {
			return u
		}
	}
	return nil
}

// subscribe forwards a client's resources/subscribe to the server that
// serves the URI, once for every client session subscribed to it: the
// server's notifications/resources/updated go to every client session
// subscribed (docs/gateway.md).
func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	u := g.resourceServer(uri)
	if u == nil {
		return mcp.ResourceNotFoundError(uri)
	}
	g.mu.Lock()
	first := g.subs[uri] == 0
	g.subs[uri]++
	g.mu.Unlock()
	if !first {
		return nil
	}
	cs := u.session()
	if cs == nil {
		g.unsub(uri)
		return mcp.ResourceNotFoundError(uri)
	}
	if err := cs.Subscribe(ctx, req.Params); err != nil {
		g.unsub(uri)
		return err
	}
	return nil
}

// unsubscribe ends a client session's subscription; the server's ends
// with the last one.
func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	uri := req.Params.URI
	if !g.unsub(uri) {
		return nil
	}
	if u := g.resourceServer(uri); u != nil {
		if cs := u.session(); cs != nil {
			return cs.Unsubscribe(ctx, req.Params)
		}
	}
	return nil
}

// unsub counts one subscription to uri less and reports whether it was
// the last.
func (g *Gateway) unsub(uri string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.subs[uri] == 0 {
		return false
	}
	g.subs[uri]--
	if g.subs[uri] > 0 {
		return false
	}
	delete(g.subs, uri)
	return true
}

// resourceUpdated passes a server's notifications/resources/updated to
// the client sessions subscribed to the URI.
func (u *upstream) resourceUpdated(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
	_ = u.g.server.ResourceUpdated(ctx, r.Params)
}

// resubscribe subscribes a server that (re)started to the URIs clients
// are subscribed to that it now serves first.
func (u *upstream) resubscribe(ctx context.Context, cs *mcp.ClientSession) {
	g := u.g
	g.mu.Lock()
	uris := make([]string, 0, len(g.subs))
	for uri := range g.subs {
		uris = append(uris, uri)
	}
	g.mu.Unlock()
	for _, uri := range uris {
		if g.resourceServer(uri) == u {
			_ = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		}
	}
}
