package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/readtools"
)

// The methods the proxy looks at; every other message passes unchanged.
const (
	methodInitialize    = "initialize"
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
	// ErrClient means the client connection failed other than by closing.
	ErrClient = errors.New("the MCP client connection failed")
)

// Proxy forwards one MCP client's session to an upstream MCP server and
// bounds the upstream's tool results on the way (see the package
// documentation). It is safe to Run several sessions at once.
type Proxy struct {
	bound     bounder
	read      reader
	toolsJSON []json.RawMessage // the read tools, served by the proxy itself
	tmplJSON  json.RawMessage
	mimes     mimeCache
}

// NewProxy returns a Proxy that stores oversized blocks with off and serves
// reads with reh. Both must be built on the same binding. The read tools'
// names are off's policy's (Options' names are not used).
func NewProxy(off *hybridctx.Offloader, reh *hybridctx.Rehydrator, opts *Options) (*Proxy, error) {
	if off == nil {
		return nil, fmt.Errorf("%w: an Offloader is required", ErrInvalidOptions)
	}
	r, err := newReader(reh, opts)
	if err != nil {
		return nil, err
	}
	p := &Proxy{mimes: mimeCache{m: map[artifact.Ref]string{}}}
	if err := r.setNames(readtools.NamesOf(off.Policy())); err != nil {
		return nil, err
	}
	r.mimeOf = p.mimes.get
	p.read = *r
	p.bound = bounder{off: off, reporter: opts.reporter(), remember: p.mimes.put}
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
// request still waiting gets a JSON-RPC error first), ErrUpstreamStart or
// ErrClient, or ctx's error.
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
	s := &session{p: p, ctx: sctx, cancel: cancel, wctx: context.WithoutCancel(ctx), up: up, down: down,
		pending: map[jsonrpc.ID]*call{}, local: map[jsonrpc.ID]context.CancelFunc{}}
	return s.run(ctx)
}

// session is one client connection and its upstream.
type session struct {
	p      *Proxy
	ctx    context.Context // cancelled when the session ends
	cancel context.CancelFunc
	wctx   context.Context // for writes, which must outlive ctx at shutdown
	up     mcp.Connection
	down   mcp.Connection

	mu      sync.Mutex
	pending map[jsonrpc.ID]*call              // client requests forwarded upstream
	local   map[jsonrpc.ID]context.CancelFunc // client requests the proxy serves
	work    sync.WaitGroup                    // local requests and result bounding
}

// call is a client request waiting for the upstream's response.
type call struct {
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
		return err
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

// readClient forwards the client's messages until its connection ends.
func (s *session) readClient() error {
	for {
		msg, err := s.down.Read(s.ctx)
		switch {
		case err == nil:
		case errors.Is(err, io.EOF) || s.ctx.Err() != nil:
			return nil
		default:
			return fmt.Errorf("%w: %w", ErrClient, err)
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if m.ID.IsValid() {
				s.clientRequest(m)
			} else {
				s.clientNotification(m)
			}
		case *jsonrpc.Response:
			_ = s.up.Write(s.wctx, m) // the answer to an upstream request
		}
	}
}

// readUpstream forwards the upstream's messages until its connection ends.
func (s *session) readUpstream() error {
	for {
		msg, err := s.up.Read(s.ctx)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			s.upstreamResponse(m)
		case *jsonrpc.Request:
			_ = s.down.Write(s.wctx, m) // requests and notifications pass
		}
	}
}

func (s *session) clientRequest(m *jsonrpc.Request) {
	switch m.Method {
	case methodToolsCall:
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p) // malformed params go upstream, which answers
		if s.p.read.set.Has(p.Name) {
			s.serve(m, func(ctx context.Context) (any, error) { return s.p.read.callTool(ctx, p.Name, p.Arguments) })
			return
		}
		s.forward(m, p.Name)
	case methodResourcesRead, methodSubscribe, methodUnsubscribe:
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(m.Params, &p) != nil || !isArtifactURI(p.URI) {
			s.forward(m, "")
			return
		}
		if m.Method == methodResourcesRead {
			s.serve(m, func(ctx context.Context) (any, error) { return s.p.read.readResource(ctx, p.URI) })
			return
		}
		// Stored bodies never change: subscribing is a no-op.
		s.serve(m, func(context.Context) (any, error) { return struct{}{}, nil })
	default:
		s.forward(m, "")
	}
}

func (s *session) clientNotification(m *jsonrpc.Request) {
	if m.Method == notifyCancelled {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				s.mu.Lock()
				stop, local := s.local[id]
				c := s.pending[id]
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
	_ = s.up.Write(s.wctx, m)
}

// forward sends a client request upstream and remembers it until the
// response comes back.
func (s *session) forward(m *jsonrpc.Request, tool string) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	s.pending[m.ID] = &call{method: m.Method, tool: tool, ctx: ctx, cancel: cancel}
	s.mu.Unlock()
	if err := s.up.Write(s.wctx, m); err != nil {
		if c := s.take(m.ID); c != nil {
			c.cancel()
			s.respond(m.ID, nil, errUpstreamGone)
		}
	}
}

// serve answers a client request in the proxy, cancellable by the client.
func (s *session) serve(m *jsonrpc.Request, fn func(context.Context) (any, error)) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	s.local[m.ID] = cancel
	s.mu.Unlock()
	s.work.Add(1)
	go func() {
		defer s.work.Done()
		res, err := fn(ctx)
		s.mu.Lock()
		delete(s.local, m.ID)
		s.mu.Unlock()
		cancel()
		s.respond(m.ID, res, err)
	}()
}

func (s *session) take(id jsonrpc.ID) *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.pending[id]
	delete(s.pending, id)
	return c
}

// upstreamResponse rewrites the responses the proxy changes and passes the
// rest.
func (s *session) upstreamResponse(m *jsonrpc.Response) {
	c := s.take(m.ID)
	if c == nil {
		_ = s.down.Write(s.wctx, m)
		return
	}
	switch c.method {
	case methodInitialize, methodDiscover:
		if m.Error == nil {
			m.Result = withCapabilities(m.Result)
		}
	case methodToolsList:
		switch {
		case isMethodNotFound(m.Error):
			m.Error, m.Result = nil, localList("tools", s.p.toolsJSON...)
		case m.Error == nil:
			m.Result = withReadTools(m.Result, s.p.toolsJSON, s.p.read.set.Has)
		}
	case methodTemplatesList:
		switch {
		case isMethodNotFound(m.Error):
			m.Error, m.Result = nil, localList("resourceTemplates", s.p.tmplJSON)
		case m.Error == nil:
			m.Result = withTemplate(m.Result, s.p.tmplJSON)
		}
	case methodResourcesList:
		if isMethodNotFound(m.Error) {
			m.Error, m.Result = nil, localList("resources")
		}
	case methodToolsCall:
		if m.Error == nil {
			// Bound off the read loop, so other messages keep flowing.
			s.work.Add(1)
			go func() {
				defer s.work.Done()
				s.boundAndSend(c, m)
			}()
			return
		}
	}
	c.cancel()
	_ = s.down.Write(s.wctx, m)
}

func (s *session) boundAndSend(c *call, m *jsonrpc.Response) {
	defer c.cancel()
	res, err := s.p.bound.boundWire(c.ctx, hybridctx.Call{Tool: c.tool, ID: fmt.Sprint(m.ID.Raw())}, m.Result)
	if err != nil {
		m.Result, m.Error = nil, wireError(err)
	} else {
		m.Result = res
	}
	_ = s.down.Write(s.wctx, m)
}

// failPending answers every forwarded request that will get no response.
func (s *session) failPending() {
	s.mu.Lock()
	calls := s.pending
	s.pending = map[jsonrpc.ID]*call{}
	s.mu.Unlock()
	for id, c := range calls {
		c.cancel()
		s.respond(id, nil, errUpstreamGone)
	}
}

func (s *session) respond(id jsonrpc.ID, result any, err error) {
	resp := &jsonrpc.Response{ID: id}
	if err == nil {
		raw, merr := json.Marshal(result)
		if merr != nil {
			err = merr
		} else {
			resp.Result = raw
		}
	}
	if err != nil {
		resp.Error = wireError(err)
	}
	_ = s.down.Write(s.wctx, resp)
}

var errUpstreamGone = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the upstream MCP server exited"}

// wireError turns an error into the JSON-RPC error the client sees: the
// error itself when it is one, else a categorical message (never error text,
// which may name storage paths).
func wireError(err error) error {
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		return we
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: request cancelled"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: internal error"}
}

func isMethodNotFound(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound
}

// mimeCache remembers the MIME types of stored binary payloads, bounded, so
// reads can label them; it is a hint only.
type mimeCache struct {
	mu sync.Mutex
	m  map[artifact.Ref]string
}

const maxMIMEs = 4096

func (c *mimeCache) put(ref artifact.Ref, mime string) {
	if mime == mimeText || mime == mimeJSON || mime == mimeBinary {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[ref]; !ok && len(c.m) >= maxMIMEs {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[ref] = mime
}

func (c *mimeCache) get(ref artifact.Ref) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[ref]
}
