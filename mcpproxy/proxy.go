package mcpproxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wireconn"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

// The methods the proxy looks at; every other message passes unchanged.
const (
	methodInitialize    = wiremsg.MethodInitialize
	methodDiscover      = "server/discover"
	methodToolsList     = "tools/list"
	methodToolsCall     = "tools/call"
	methodResourcesList = "resources/list"
	methodTemplatesList = "resources/templates/list"
	methodResourcesRead = "resources/read"
	methodSubscribe     = "resources/subscribe"
	methodUnsubscribe   = "resources/unsubscribe"
	notifyCancelled     = "notifications/cancelled"
)

// Errors Run returns.
var (
	// ErrUpstreamStart means the upstream server could not be started or
	// connected.
	ErrUpstreamStart = errors.New("cannot start the upstream MCP server")
	// ErrUpstreamClosed means the upstream server exited, or its connection
	// broke, while the client was still connected.
	ErrUpstreamClosed = errors.New("the upstream MCP server exited")
	// ErrUpstreamUnreachable means the client's initialize request could
	// not be sent upstream (an HTTP upstream that cannot be reached): the
	// session ended, since nothing could be proxied.
	ErrUpstreamUnreachable = errors.New("the upstream MCP server could not be reached")
	// ErrClient means the client connection failed other than by closing.
	ErrClient = errors.New("the MCP client connection failed")
)

// Proxy forwards one MCP client's session to an upstream MCP server and
// bounds the upstream's tool results on the way (see the package
// documentation). It is safe to Run several sessions at once.
type Proxy struct {
	bound     bound.Bounder
	read      reader
	toolsJSON []json.RawMessage // the read tools, served by the proxy itself
	tmplJSON  json.RawMessage
	mimes     mimeCache
	log       *slog.Logger
	// streamAbove is the upstream line length past which a tools/call
	// payload is streamed (see stream.go).
	streamAbove int
	streamed    atomic.Int64 // results bounded as they were read, for tests
	tempDir     string
	nonce       string // in the tokens of streamed payloads (internal/bound/walk.go)
}

// NewProxy returns a Proxy that stores oversized blocks with off and serves
// reads with reh. Both must be built on the same binding. The read tools'
// names are off's policy's, each replaced by Options.Names' when set.
func NewProxy(off *hybridctx.Offloader, reh *hybridctx.Rehydrator, opts *Options) (*Proxy, error) {
	if off == nil {
		return nil, fmt.Errorf("%w: an Offloader is required", ErrInvalidOptions)
	}
	r, err := newReader(reh, opts)
	if err != nil {
		return nil, err
	}
	p := &Proxy{mimes: mimeCache{m: map[artifact.Ref]string{}}, streamAbove: streamAbove, nonce: bound.NewNonce()}
	if opts != nil {
		p.log, p.tempDir = opts.Logger, opts.TempDir
	}
	if err := r.setNames(readNames(off, opts)); err != nil {
		return nil, err
	}
	r.mimeOf = p.mimes.get
	p.read = *r
	p.bound = bound.Bounder{Off: off, Reporter: opts.reporter(), Remember: p.mimes.put}
	for _, t := range r.toolDefs() {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		p.toolsJSON = append(p.toolsJSON, b)
	}
	if p.tmplJSON, err = json.Marshal(r.templateDef()); err != nil {
		return nil, err
	}
	return p, nil
}

// Run connects upstream (the MCP server) and downstream (the MCP client) and
// forwards messages both ways until one side ends. It returns nil when the
// client closed its connection (the upstream is then closed gracefully), an
// error wrapping ErrUpstreamClosed when the upstream ended first (every
// request still waiting gets a JSON-RPC error first), ErrUpstreamUnreachable
// when the client's initialize could not be sent upstream, ErrUpstreamStart
// or ErrClient, or ctx's error.
func (p *Proxy) Run(ctx context.Context, upstream, downstream mcp.Transport) error {
	up, err := upstream.Connect(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUpstreamStart, err)
	}
	down, err := downstream.Connect(ctx)
	if err != nil {
		_ = up.Close()
		return fmt.Errorf("%w: %w", ErrClient, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &session{p: p, ctx: sctx, cancel: cancel, wctx: context.WithoutCancel(ctx), up: wireconn.Of(up), down: wireconn.Of(down),
		pending: map[string]*call{}, local: map[string]context.CancelFunc{}}
	if l, ok := s.up.(interface{ SetLarge(wireconn.Hook, int) }); ok {
		l.SetLarge(s.streamLarge, p.streamAbove)
	}
	if l, ok := s.down.(interface{ SetLarge(wireconn.Hook, int) }); ok {
		l.SetLarge(s.passLarge, p.streamAbove)
	}
	return s.run(ctx)
}

// session is one client connection and its upstream.
type session struct {
	p      *Proxy
	ctx    context.Context // cancelled when the session ends
	cancel context.CancelFunc
	wctx   context.Context // for writes, which must outlive ctx at shutdown
	up     wireconn.Conn
	down   wireconn.Conn

	mu      sync.Mutex
	pending map[string]*call              // by wiremsg.IDKey: client requests forwarded upstream
	local   map[string]context.CancelFunc // by wiremsg.IDKey: client requests the proxy serves
	work    sync.WaitGroup                // local requests and result bounding
	drops   dropCounts
	upErr   error // why the session was ended from the upstream side, if it was
}

// call is a client request waiting for the upstream's response.
type call struct {
	id     json.RawMessage // the client's id, exactly as sent
	method string
	tool   string
	ctx    context.Context
	cancel context.CancelFunc
}

func (s *session) run(parent context.Context) error {
	clientDone := make(chan error, 1)
	upstreamDone := make(chan error, 1)
	go func() { clientDone <- s.readClient() }()
	go func() { upstreamDone <- s.readUpstream() }()
	select {
	case err := <-clientDone:
		// The client left: nobody waits for answers; close the upstream
		// gracefully (stdin first, then signals).
		s.cancel()
		_ = s.up.Close()
		<-upstreamDone
		s.work.Wait()
		_ = s.down.Close()
		if parent.Err() != nil {
			return parent.Err()
		}
		return cmp.Or(s.unreachable(), err)
	case err := <-upstreamDone:
		if parent.Err() != nil {
			s.cancel()
		}
		s.failPending()
		closeErr := s.up.Close()
		s.work.Wait() // results that arrived before the end are still delivered
		s.cancel()
		_ = s.down.Close()
		<-clientDone
		if parent.Err() != nil {
			return parent.Err()
		}
		if uerr := s.unreachable(); uerr != nil && closeErr == nil {
			return uerr // else the upstream's own end (a process's exit status) says more
		}
		return upstreamError(err, closeErr)
	}
}

func upstreamError(readErr, closeErr error) error {
	if readErr != nil && !errors.Is(readErr, io.EOF) && !errors.Is(readErr, context.Canceled) {
		return fmt.Errorf("%w: reading from it failed: %w", ErrUpstreamClosed, readErr)
	}
	if closeErr != nil {
		return fmt.Errorf("%w: %w", ErrUpstreamClosed, closeErr)
	}
	return ErrUpstreamClosed
}

// readClient forwards the client's messages until its connection ends. A
// malformed message is answered (when it has an id) or dropped, and the
// session goes on.
func (s *session) readClient() error {
	for {
		m, err := s.down.ReadMsg(s.ctx)
		var bad *wiremsg.Bad
		switch {
		case err == nil:
		case errors.As(err, &bad):
			s.drop(fromClient, bad.Why)
			if bad.ID != nil {
				_ = s.down.WriteMsg(s.wctx, wiremsg.ErrorResponse(bad.ID, bad.RPCError()))
			}
			continue
		case errors.Is(err, io.EOF) || s.ctx.Err() != nil:
			return nil
		default:
			return fmt.Errorf("%w: %w", ErrClient, err)
		}
		switch {
		case m.IsRequest():
			s.clientRequest(m)
		case m.IsCall():
			s.clientNotification(m)
		default:
			_ = s.up.WriteMsg(s.wctx, m) // the answer to an upstream request
		}
	}
}

// readUpstream forwards the upstream's messages until its connection ends.
// A malformed message is dropped; when it names a request in progress, that
// request gets an error instead of waiting forever.
func (s *session) readUpstream() error {
	for {
		m, err := s.up.ReadMsg(s.ctx)
		var bad *wiremsg.Bad
		switch {
		case err == nil:
		case errors.As(err, &bad):
			s.drop(fromUpstream, bad.Why)
			if key, ok := wiremsg.IDKey(bad.ID); ok {
				if c := s.take(key); c != nil {
					c.cancel()
					s.respond(c.id, nil, wiremsg.UpstreamError(bad))
				}
			}
			continue
		default:
			return err
		}
		if m.IsCall() {
			_ = s.down.WriteMsg(s.wctx, m) // requests and notifications pass
			continue
		}
		s.upstreamResponse(m)
	}
}

func (s *session) clientRequest(m *wiremsg.Msg) {
	key, _ := wiremsg.IDKey(m.ID)
	s.mu.Lock()
	_, busy := s.pending[key]
	_, busyLocal := s.local[key]
	s.mu.Unlock()
	if busy || busyLocal {
		// Never two requests under one id: the answer to one could be
		// taken for the other's.
		m.Release()
		s.drop(fromClient, wiremsg.WhyDup)
		_ = s.down.WriteMsg(s.wctx, wiremsg.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "hybridctx: " + wiremsg.WhyDup}))
		return
	}
	switch m.Name {
	case methodToolsCall:
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p) // malformed params go upstream, which answers
		if m.Has("params") {
			p.Name = m.Big.Name
		}
		if s.p.read.set.Has(p.Name) {
			if m.Load() != nil {
				s.respond(m.ID, nil, errTaken)
				return
			}
			_ = json.Unmarshal(m.Params, &p)
			s.serve(m, key, func(ctx context.Context) (any, error) { return s.p.read.callTool(ctx, p.Name, p.Arguments) })
			return
		}
		s.forward(m, key, p.Name)
	case methodResourcesRead, methodSubscribe, methodUnsubscribe:
		var p struct {
			URI string `json:"uri"`
		}
		bad := json.Unmarshal(m.Params, &p) != nil
		if m.Has("params") {
			p.URI, bad = m.Big.URI, m.Big.URIBad
		}
		if bad || !isArtifactURI(p.URI) {
			s.forward(m, key, "")
			return
		}
		m.Release() // only the uri is needed
		if m.Name == methodResourcesRead {
			s.serve(m, key, func(ctx context.Context) (any, error) { return s.p.read.readResource(ctx, p.URI) })
			return
		}
		// Stored bodies never change: subscribing is a no-op.
		s.serve(m, key, func(context.Context) (any, error) { return struct{}{}, nil })
	default:
		s.forward(m, key, "")
	}
}

func (s *session) clientNotification(m *wiremsg.Msg) {
	if m.Name == notifyCancelled && m.Load() == nil {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			if key, ok := wiremsg.IDKey(p.RequestID); ok {
				s.mu.Lock()
				stop, local := s.local[key]
				c := s.pending[key]
				s.mu.Unlock()
				if local {
					stop()
					return
				}
				if c != nil {
					c.cancel()
				}
			}
		}
	}
	_ = s.up.WriteMsg(s.wctx, m)
}

// forward sends a client request upstream and remembers it until the
// response comes back.
func (s *session) forward(m *wiremsg.Msg, key, tool string) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	s.pending[key] = &call{id: m.ID, method: m.Name, tool: tool, ctx: ctx, cancel: cancel}
	s.mu.Unlock()
	if err := s.up.WriteMsg(s.wctx, m); err != nil {
		// Without an upstream session nothing can be proxied: the session
		// ends with the reason (an HTTP upstream that cannot be reached),
		// recorded before the client hears of it, so that Run reports it
		// even when the client leaves first.
		initialize := m.Name == methodInitialize
		if initialize {
			s.mu.Lock()
			s.upErr = cmp.Or(s.upErr, err)
			s.mu.Unlock()
		}
		if c := s.take(key); c != nil {
			c.cancel()
			s.respond(m.ID, nil, errNotSent)
		}
		if initialize {
			_ = s.up.Close()
		}
	}
}

// unreachable returns the error Run reports when the client's initialize
// could not be sent upstream, else nil.
func (s *session) unreachable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.upErr == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrUpstreamUnreachable, s.upErr)
}

// serve answers a client request in the proxy, cancellable by the client.
// The request never goes upstream, so no upstream message can answer it.
func (s *session) serve(m *wiremsg.Msg, key string, fn func(context.Context) (any, error)) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	s.local[key] = cancel
	s.mu.Unlock()
	s.work.Add(1)
	go func() {
		defer s.work.Done()
		res, err := fn(ctx)
		s.mu.Lock()
		delete(s.local, key)
		s.mu.Unlock()
		cancel()
		s.respond(m.ID, res, err)
	}()
}

// take removes and returns the forwarded request with the id key.
func (s *session) take(key string) *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.pending[key]
	delete(s.pending, key)
	return c
}
