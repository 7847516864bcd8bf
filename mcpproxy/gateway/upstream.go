//lint:file-ignore SA1019 logging, sampling and roots are deprecated as of protocol 2026-07-28 but still spoken by clients and servers of the versions before; the gateway routes them (docs/gateway.md).

package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/mcpproxy"
)

// upstream is one configured server: its client, its current session (nil
// while down) and the names it registered.
type upstream struct {
	g     *Gateway
	index int // config order
	cfg   *Server
	off   *hybridctx.Offloader
	cl    *mcp.Client

	mu       sync.Mutex
	cs       *mcp.ClientSession
	tools    []string // exposed names registered now
	prompts  []string
	uris     []string
	tmpls    []string
	rootURIs []string
	inCall   []*clientCall // the client calls this server is serving now, oldest first
}

// clientCall is a client's call an upstream is serving: what the upstream
// sends while it does (log messages, sampling and elicitation requests)
// goes to that client session, related to that call (on its response
// stream over Streamable HTTP, at the log level the call carries).
type clientCall struct {
	ctx context.Context
	ss  *mcp.ServerSession
	rt  *roundTrip // non-nil for a client on multi-round-trip requests (mrtr.go)
}

// serving records a client call the upstream serves until the returned
// function is called.
func (u *upstream) serving(ctx context.Context, ss *mcp.ServerSession, rt *roundTrip) func() {
	c := &clientCall{ctx: ctx, ss: ss, rt: rt}
	u.mu.Lock()
	u.inCall = append(u.inCall, c)
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		for i, o := range u.inCall {
			if o == c {
				u.inCall = append(u.inCall[:i:i], u.inCall[i+1:]...)
				return
			}
		}
	}
}

// call returns the latest client call the upstream serves, or nil.
func (u *upstream) call() *clientCall {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.inCall) == 0 {
		return nil
	}
	return u.inCall[len(u.inCall)-1]
}

func newUpstream(g *Gateway, index int, s *Server) (*upstream, error) {
	u := &upstream{g: g, index: index, cfg: s, off: g.off}
	if s.Threshold > 0 && s.Threshold != g.off.Policy().InlineThreshold {
		if g.opts.Offloader == nil {
			return nil, fmt.Errorf("%w: server %q sets a threshold and Options.Offloader is nil", ErrInvalidOptions, s.Name)
		}
		off, err := g.opts.Offloader(s.Threshold)
		if err != nil {
			return nil, &ConfigError{Server: s.Name, Field: "hybridctx.threshold", Problem: "not a usable threshold"}
		}
		u.off = off
	}
	u.cl = mcp.NewClient(&mcp.Implementation{Name: "hybridctx-gateway", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler:       u.createMessage,
		ElicitationHandler:         u.elicit,
		ToolListChangedHandler:     func(ctx context.Context, _ *mcp.ToolListChangedRequest) { u.resync(ctx) },
		PromptListChangedHandler:   func(ctx context.Context, _ *mcp.PromptListChangedRequest) { u.resync(ctx) },
		ResourceListChangedHandler: func(ctx context.Context, _ *mcp.ResourceListChangedRequest) { u.resync(ctx) },
		ResourceUpdatedHandler:     u.resourceUpdated,
		KeepAlive:                  max(g.opts.KeepAlive, 0),
	})
	u.cl.AddReceivingMiddleware(u.relayElicitation)
	return u, nil
}

// relayElicitation hands a server's elicitation/create to the client as
// it is: the client, which answers it, judges its schema (the SDK's own
// client would refuse schemas that clients accept).
func (u *upstream) relayElicitation(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" && r.Params != nil {
			return u.elicit(ctx, r)
		}
		return next(ctx, method, req)
	}
}

func (u *upstream) session() *mcp.ClientSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cs
}

// transport makes the server's transport: its command, or an HTTP client
// for its URL (Streamable HTTP, falling back to HTTP+SSE).
func (u *upstream) transport() (mcp.Transport, error) {
	s := u.cfg
	if u.g.opts.Transport != nil {
		return u.g.opts.Transport(s)
	}
	if s.Type == TypeStdio {
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = s.Cwd
		cmd.Stderr = u.g.opts.UpstreamStderr
		if len(s.Env) > 0 {
			keys := make([]string, 0, len(s.Env))
			for k := range s.Env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			env := cmd.Environ()
			for _, k := range keys {
				env = append(env, k+"="+s.Env[k])
			}
			cmd.Env = env
		}
		return &mcpproxy.Command{Cmd: cmd, MaxMessageBytes: u.g.opts.MaxMessageBytes, DropEnv: u.g.opts.DropEnv}, nil
	}
	h := http.Header{}
	for k, v := range s.Headers {
		h.Set(k, v)
	}
	return &mcpproxy.HTTPUpstream{URL: s.URL, Header: h, MaxMessageBytes: u.g.opts.MaxMessageBytes}, nil
}

// run keeps the upstream connected until ctx ends: start (bounded by the
// start timeout), register its names, wait for its end, withdraw them,
// wait the backoff (1 s doubling to 60 s; back to 1 s after a session that
// lasted 60 s), start again. The first start's result goes to first.
func (u *upstream) run(ctx context.Context, first chan<- error) {
	backoff := FirstBackoff
	for {
		began := u.g.opts.Now()
		err := u.connect(ctx)
		if first != nil {
			first <- err
			first = nil
		}
		if err == nil {
			u.g.logf(slog.LevelInfo, "hybridctx gateway: server started", "server", u.cfg.Name)
			cs := u.session()
			u.resubscribe(ctx, cs)
			_ = cs.Wait()
			u.down()
			if ctx.Err() != nil {
				return
			}
			u.g.logf(slog.LevelWarn, "hybridctx gateway: server stopped; restarting", "server", u.cfg.Name, "in", backoff)
			if u.g.opts.Now().Sub(began) >= MaxBackoff {
				backoff = FirstBackoff
			}
		} else {
			if ctx.Err() != nil {
				return
			}
			u.g.logf(slog.LevelWarn, "hybridctx gateway: server failed to start", "server", u.cfg.Name, "error", category(err), "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-u.g.opts.After(backoff):
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}

// category is what the log says of a start failure: never the error's
// text, which may hold a URL's query or a path.
func category(err error) string {
	switch {
	case errors.Is(err, ErrNameCollision), errors.Is(err, ErrTooManyTools):
		return err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "did not answer initialize within the start timeout"
	case errors.Is(err, exec.ErrNotFound):
		return "command not found"
	}
	return "could not start or initialize"
}

// connect starts the server, initializes it and registers its names.
func (u *upstream) connect(ctx context.Context) error {
	t, err := u.transport()
	if err != nil {
		return err
	}
	// Start and lists are bounded by the start timeout; the session then
	// lives until the gateway closes (its context is not the timer's).
	sctx, cancel := context.WithCancelCause(ctx)
	ct := &closer{Transport: t, u: u}
	timer := time.AfterFunc(u.g.timeout, func() { cancel(context.DeadlineExceeded) })
	// A write to a server that reads nothing never returns: a start that
	// times out, or a gateway that closes, closes the connection.
	unhook := context.AfterFunc(sctx, ct.close)
	fail := func(err error) error {
		timer.Stop()
		unhook()
		if c := context.Cause(sctx); c != nil && ctx.Err() == nil {
			err = c
		}
		cancel(nil)
		return err
	}
	cs, err := u.cl.Connect(sctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: UpstreamProtocolVersion})
	if err != nil {
		return fail(err)
	}
	go func() { // ends the session when the gateway closes
		select {
		case <-sctx.Done():
			_ = cs.Close()
		case <-waitDone(cs):
		}
	}()
	// The session serves calls before its tools are listed: a client that
	// sees a tool (list_changed) may call it at once.
	u.mu.Lock()
	u.cs = cs
	u.mu.Unlock()
	if err := u.sync(sctx, cs); err != nil {
		err = fail(err)
		_ = cs.Close()
		u.down()
		return err
	}
	// Every log message comes; the client's own level filters them. A
	// server without logging answers an error, which changes nothing.
	_ = cs.SetLoggingLevel(sctx, &mcp.SetLoggingLevelParams{Level: "debug"})
	if !timer.Stop() || !unhook() {
		err := fail(context.DeadlineExceeded)
		_ = cs.Close()
		u.down()
		return err
	}
	return nil
}

// UpstreamProtocolVersion is the protocol version the gateway offers its
// servers: the latest in which a server asks for sampling and elicitation
// with requests of its own during a call, which the gateway forwards to
// the calling client (docs/gateway.md).
const UpstreamProtocolVersion = "2025-11-25"

// closer remembers the connection its transport made, so that a start
// that times out can close it, and hands the session the upstream's wire.
type closer struct {
	mcp.Transport
	u    *upstream
	mu   sync.Mutex
	conn mcp.Connection
}

func (c *closer) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	return &wire{Connection: conn, u: c.u}, nil
}

func (c *closer) close() {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

func waitDone(cs *mcp.ClientSession) <-chan struct{} {
	c := make(chan struct{})
	go func() { _ = cs.Wait(); close(c) }()
	return c
}

// down withdraws the upstream's names (clients get list_changed).
func (u *upstream) down() {
	u.mu.Lock()
	u.cs = nil
	tools, prompts, uris, tmpls := u.tools, u.prompts, u.uris, u.tmpls
	u.tools, u.prompts, u.uris, u.tmpls = nil, nil, nil, nil
	u.mu.Unlock()
	g := u.g
	if len(tools) > 0 {
		g.server.RemoveTools(tools...)
	}
	if len(prompts) > 0 {
		g.server.RemovePrompts(prompts...)
	}
	g.withdrawResources(u, uris, tmpls)
}

// resync re-reads the upstream's lists after it said they changed.
func (u *upstream) resync(ctx context.Context) {
	cs := u.session()
	if cs == nil {
		return
	}
	if err := u.sync(ctx, cs); err != nil {
		u.g.logf(slog.LevelWarn, "hybridctx gateway: cannot re-read a server's lists", "server", u.cfg.Name, "error", category(err))
	}
}

var errNoClient = errors.New("hybridctx: no client session to route the request to")

func (u *upstream) createMessage(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if c := u.call(); c != nil {
		if c.rt != nil {
			return c.rt.sample(ctx, r.Params)
		}
		return c.ss.CreateMessage(c.ctx, r.Params)
	}
	ss := u.g.session()
	if ss == nil {
		return nil, errNoClient
	}
	return ss.CreateMessage(ctx, r.Params)
}

func (u *upstream) elicit(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if c := u.call(); c != nil {
		if c.rt != nil {
			return c.rt.elicit(ctx, r.Params)
		}
		return c.ss.Elicit(c.ctx, r.Params)
	}
	ss := u.g.session()
	if ss == nil {
		return nil, errNoClient
	}
	return ss.Elicit(ctx, r.Params)
}

// syncRoots gives every upstream the client's roots, when it has any.
func (g *Gateway) syncRoots(ctx context.Context, ss *mcp.ServerSession) {
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().Capabilities == nil || ss.InitializeParams().Capabilities.RootsV2 == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := ss.ListRoots(ctx, nil)
	if err != nil {
		return
	}
	for _, u := range g.ups {
		u.setRoots(res.Roots)
	}
}
