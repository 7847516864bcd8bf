package mcpproxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/internal/httpguard"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/listen"
)

// Defaults of HTTPOptions.
const (
	// DefaultMaxSessions is how many MCP sessions an HTTPHandler serves at
	// once unless HTTPOptions.MaxSessions says otherwise.
	DefaultMaxSessions = 16
	// DefaultIdleTimeout ends a session that received no request for this
	// long.
	DefaultIdleTimeout = 30 * time.Minute
	// DefaultMaxRequestBytes bounds one HTTP request body (one client
	// message, or one batch) unless HTTPOptions.MaxRequestBytes says
	// otherwise.
	DefaultMaxRequestBytes = 4 << 20
)

// EventStoreBytes bounds the messages an HTTPHandler keeps for redelivery,
// over all its sessions.
const EventStoreBytes = 32 << 20

// CodeTooManySessions is the JSON-RPC error code of a new session refused
// because HTTPOptions.MaxSessions sessions are open and every one of them
// has a request in flight.
const CodeTooManySessions = -32001

// ErrSessionStart wraps the error a SessionFunc returned.
var ErrSessionStart = errors.New("cannot start the MCP session")

// HTTPOptions configure an HTTPHandler. A nil *HTTPOptions means defaults.
type HTTPOptions struct {
	// MaxSessions bounds the open sessions of each credential (of all
	// clients on a listener without tokens). At the limit, a new session
	// ends the least recently used session of the same credential with no
	// request in flight (its client gets 404 next and starts a new
	// session); only when every one of them is busy is the new one refused
	// with a JSON-RPC error (CodeTooManySessions). A credential never ends
	// another credential's sessions. Zero means DefaultMaxSessions.
	MaxSessions int
	// IdleTimeout ends a session (and its upstream) when no request of it
	// arrived for this long. Zero means DefaultIdleTimeout; negative, never.
	IdleTimeout time.Duration
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer <Token>); others get 401. It is never logged
	// or echoed. It is the one credential named "".
	Token string
	// Credentials, instead of Token, are the bearer tokens accepted, each
	// naming its credential: a request must carry one of them (others get
	// 401), a session is served only to requests of the credential that
	// opened it, and the SessionFunc learns the credential's name.
	Credentials []Credential
	// SessionBurst and SessionRate bound how fast one credential opens
	// sessions: SessionBurst at once, then SessionRate per second; a new
	// session over that is refused with HTTP 429 (CodeSessionRate) and a
	// Retry-After header. Zero means DefaultSessionBurst and
	// DefaultSessionRate; a negative SessionRate, no bound.
	SessionBurst int
	SessionRate  float64
	// Now is the clock of the session rate; nil means time.Now.
	Now func() time.Time
	// MaxRequestBytes bounds one request body; a larger one gets 413. Zero
	// means DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// AllowOrigins lists origins (scheme://host[:port]) whose browser
	// requests are accepted besides the listener's own origin. Every
	// Origin header of a request must be one of these, or name the
	// listener (its port, and a loopback host on a loopback listener);
	// others get 403.
	AllowOrigins []string
	// BodyTimeout bounds the time a request body takes to arrive, on top
	// of what its size allows at MinBodyRate; a slower one gets 408 and
	// its connection is closed. Zero means DefaultBodyTimeout.
	BodyTimeout time.Duration
}

// A SessionFunc prepares one new MCP session: the Proxy that bounds it (built
// on the owner of the session's credential, so that a client whose session
// ends or is evicted reads its references in the next one, and credentials
// never see each other's artifacts) and its upstream transport (one
// upstream connection or process per session). id is the session's
// Mcp-Session-Id; credential is the name of the Credential the client
// presented ("" for Token, or on a listener without tokens).
type SessionFunc func(ctx context.Context, id, credential string) (*Proxy, mcp.Transport, error)

// HTTPHandler serves MCP clients over Streamable HTTP (the official Go SDK's
// server transport), one proxy session per MCP session (Mcp-Session-Id): a
// POST of initialize without a session id opens one, DELETE ends it and its
// upstream, and so do an idle timeout and the upstream's end. Requests
// arriving on a loopback address must name a loopback Host, against DNS
// rebinding; every Origin header must name the listener or an allowed
// origin; a POST must be one JSON-RPC message sent as application/json
// (see listen_check.go, package internal/listen and docs/security.md).
// Mount it at /mcp.
type HTTPHandler struct {
	newSession  SessionFunc
	max         int
	idle        time.Duration
	creds       []Credential
	tokens      []string // creds' tokens, in order
	rate        listen.Rate
	maxBody     int64
	origins     map[string]bool // canonical allowed origins
	bodyTimeout time.Duration

	ctx    context.Context // ends every session when cancelled
	cancel context.CancelFunc
	// events keeps what each session's streams carried, bounded, so that
	// a message written before the client opened its GET stream, or while
	// a stream was cut, is delivered when it (re)connects.
	events *mcp.MemoryEventStore

	mu       sync.Mutex
	sessions map[string]*httpSession
	closed   bool
	wg       sync.WaitGroup
}

// NewHTTPHandler returns a handler starting sessions with newSession.
func NewHTTPHandler(newSession SessionFunc, opts *HTTPOptions) (*HTTPHandler, error) {
	if newSession == nil {
		return nil, fmt.Errorf("%w: a SessionFunc is required", ErrInvalidOptions)
	}
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case o.MaxSessions < 0:
		return nil, fmt.Errorf("%w: MaxSessions must be >= 0", ErrInvalidOptions)
	case o.MaxRequestBytes < 0:
		return nil, fmt.Errorf("%w: MaxRequestBytes must be >= 0", ErrInvalidOptions)
	case o.BodyTimeout < 0:
		return nil, fmt.Errorf("%w: BodyTimeout must be >= 0", ErrInvalidOptions)
	case o.SessionBurst < 0:
		return nil, fmt.Errorf("%w: SessionBurst must be >= 0", ErrInvalidOptions)
	case math.IsNaN(o.SessionRate) || math.IsInf(o.SessionRate, 0):
		return nil, fmt.Errorf("%w: SessionRate must be a finite number", ErrInvalidOptions)
	}
	creds, err := credentials(o)
	if err != nil {
		return nil, err
	}
	origins, err := normalizeOrigins(o.AllowOrigins)
	if err != nil {
		return nil, err
	}
	if o.BodyTimeout == 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.SessionBurst == 0 {
		o.SessionBurst = DefaultSessionBurst
	}
	if o.SessionRate == 0 {
		o.SessionRate = DefaultSessionRate
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	events := mcp.NewMemoryEventStore(nil)
	events.SetMaxBytes(EventStoreBytes)
	tokens := make([]string, len(creds))
	for i, c := range creds {
		tokens[i] = c.Token
	}
	return &HTTPHandler{newSession: newSession, max: o.MaxSessions, idle: o.IdleTimeout, creds: creds, tokens: tokens,
		rate:    listen.Rate{Burst: o.SessionBurst, PerSecond: o.SessionRate, Now: o.Now},
		maxBody: o.MaxRequestBytes, origins: origins, bodyTimeout: o.BodyTimeout, ctx: ctx, cancel: cancel, events: events,
		sessions: map[string]*httpSession{}}, nil
}

// Sessions returns how many sessions are open.
func (h *HTTPHandler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// Close ends every session and its upstream, and refuses new ones. It waits
// until every upstream is closed.
func (h *HTTPHandler) Close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	return nil
}

// ServeHTTP implements http.Handler.
func (h *HTTPHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	cred, status, refusal := h.admit(r)
	if status != 0 {
		if status == http.StatusUnauthorized {
			rw.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
		}
		http.Error(rw, refusal, status)
		return
	}
	id := r.Header.Get("Mcp-Session-Id")
	var msg jsonrpc.Message
	if r.Method == http.MethodPost {
		// A browser's simple request (text/plain) never reaches a session.
		if !listen.JSONPOST(r) {
			http.Error(rw, listen.MsgMediaType, http.StatusUnsupportedMediaType)
			return
		}
		r.Body = http.MaxBytesReader(rw, r.Body, h.maxBody)
		var body []byte
		if msg, body = listen.ReadBody(rw, r, h.bodyTimeout); msg == nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	// The session transport's own error texts may quote the request.
	w := &listen.PlainErrors{ResponseWriter: rw}
	defer w.Finish()
	if id == "" {
		if r.Method != http.MethodPost {
			http.Error(w, "Bad Request: this method requires an Mcp-Session-Id header", http.StatusBadRequest)
			return
		}
		h.open(w, r, msg, cred)
		return
	}
	s := h.lookup(id, cred, r.Method == http.MethodPost)
	if s == nil {
		http.Error(w, "Not Found: no such MCP session", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.transport.ServeHTTP(w, r)
	case http.MethodPost:
		defer s.endRequest()
		s.transport.ServeHTTP(w, r)
	case http.MethodDelete:
		s.end()
		<-s.done
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// admit checks the bearer token, every Origin header and, on a loopback
// address, Host. It returns the credential's name and 0, or the status and
// a categorical message (never a header's value).
func (h *HTTPHandler) admit(r *http.Request) (string, int, string) {
	loopback, port := httpguard.Local(r)
	if loopback && !isLoopback(r.Host) {
		return "", http.StatusForbidden, "Forbidden: the Host header must name a loopback address"
	}
	if !h.checkOrigins(r, loopback, port) {
		return "", http.StatusForbidden, listen.MsgBadOrigin
	}
	cred, ok := h.credential(r)
	if !ok {
		return "", http.StatusUnauthorized, "Unauthorized: a valid bearer token is required"
	}
	return cred, 0, ""
}

// isLoopback reports whether a host, or host:port, is localhost or a
// loopback IP address.
func isLoopback(hostport string) bool { return httpguard.IsLoopback(hostport) }

// IsLoopbackAddress reports whether a listen address (host:port) is bound to
// loopback only; an empty host (all interfaces) is not.
func IsLoopbackAddress(addr string) bool { return httpguard.IsLoopbackAddress(addr) }

// lookup returns the session id names if cred opened it, or nil. With
// request set it counts a request in flight (see
// httpSession.startRequest), under the handler's lock, so that eviction
// never picks a session a request just found.
func (h *HTTPHandler) lookup(id, cred string, request bool) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s != nil && s.cred != cred {
		return nil
	}
	if s != nil && request {
		s.startRequest()
	}
	return s
}

// evictIdle ends the least recently used session of cred with no request
// in flight and returns it, nil when there is none. h.mu must be held.
func (h *HTTPHandler) evictIdle(cred string) *httpSession {
	var lru *httpSession
	var last time.Time
	for _, s := range h.sessions {
		if s.cred != cred {
			continue
		}
		s.mu.Lock()
		idle, used := s.refs == 0, s.used
		s.mu.Unlock()
		if idle && (lru == nil || used.Before(last)) {
			lru, last = s, used
		}
	}
	if lru == nil {
		return nil
	}
	// Forgotten at once (its client gets 404 from now on) and ended in the
	// background; the new session starts its upstream once this one's is
	// closed (start), so no more than MaxSessions upstreams ever run.
	delete(h.sessions, lru.id)
	go lru.end()
	return lru
}

// open starts a session for a POST without a session id: msg, its body,
// must be an initialize request.
func (h *HTTPHandler) open(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message, cred string) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || req.Method != methodInitialize {
		id := jsonrpc.ID{}
		if ok {
			id = req.ID
		}
		listen.WriteRPCError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidRequest, "hybridctx: a new MCP session starts with initialize (send Mcp-Session-Id otherwise)")
		return
	}
	s, status, err := h.start(r.Context(), cred)
	if err != nil {
		code := jsonrpc.CodeInternalError
		switch status {
		case http.StatusForbidden:
			code = CodeTooManySessions
		case http.StatusTooManyRequests:
			code = CodeSessionRate
		}
		var rate errSessionRate
		if errors.As(err, &rate) {
			w.Header().Set("Retry-After", listen.RetryAfter(rate.wait))
		}
		listen.WriteRPCError(w, status, req.ID, int64(code), err.Error())
		return
	}
	defer s.endRequest() // start counted this request
	s.transport.ServeHTTP(w, r)
}

// errSessionRate is the categorical error of a session over its
// credential's rate; it carries the wait for Retry-After.
type errSessionRate struct{ wait time.Duration }

func (e errSessionRate) Error() string {
	return "hybridctx: this client opens MCP sessions too fast; retry after " + listen.RetryAfter(e.wait) + " s (reuse a session instead of opening new ones)"
}

// start opens a session for cred, or returns the HTTP status and a
// categorical error.
func (h *HTTPHandler) start(ctx context.Context, cred string) (*httpSession, int, error) {
	id := rand.Text()
	h.mu.Lock()
	var evicted *httpSession
	if h.closed {
		h.mu.Unlock()
		return nil, http.StatusServiceUnavailable, errors.New("hybridctx: the proxy is shutting down")
	}
	if ok, wait := h.rate.Allow(cred); !ok {
		h.mu.Unlock()
		return nil, http.StatusTooManyRequests, errSessionRate{wait}
	}
	if h.sessionsOf(cred) >= h.max {
		if evicted = h.evictIdle(cred); evicted == nil {
			h.mu.Unlock()
			// 403, not 503: clients treat 503 as transient and drop the
			// body that says what to do.
			return nil, http.StatusForbidden, fmt.Errorf("hybridctx: too many MCP sessions (at most %d), every one busy; retry when one is done", h.max)
		}
	}
	// The opening request is in flight from the start, so that another
	// new session cannot evict this one before it answered.
	s := &httpSession{h: h, id: id, cred: cred, transport: &mcp.StreamableServerTransport{SessionID: id, EventStore: h.events},
		ready: make(chan struct{}), done: make(chan struct{}), refs: 1, used: time.Now()}
	h.sessions[id] = s
	h.wg.Add(1)
	h.mu.Unlock()

	var proxy *Proxy
	var upstream mcp.Transport
	err := ctx.Err()
	if evicted != nil {
		select {
		case <-evicted.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err == nil {
		proxy, upstream, err = h.newSession(ctx, id, cred)
	}
	if err != nil {
		h.remove(s)
		close(s.done)
		h.wg.Done()
		return nil, http.StatusBadGateway, errors.New("hybridctx: cannot start the upstream MCP server")
	}
	go s.run(proxy, upstream)
	select {
	case <-s.ready:
		return s, 0, nil
	case <-s.done:
		return nil, http.StatusBadGateway, errors.New("hybridctx: cannot start the upstream MCP server")
	}
}

func (h *HTTPHandler) remove(s *httpSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
}
