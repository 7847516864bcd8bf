// Package httpup is mcpproxy's HTTP upstream below the SDK: Streamable
// HTTP over the SDK's client transport, falling back to the 2024-11-05
// HTTP+SSE transport, with every message the server sends read in its
// round tripper (large.go, sse.go, standalone.go) so that a long one is
// offered to the proxy session's hook instead of being held whole, and
// every failure given categorical text (errors.go). mcpproxy.HTTPUpstream
// is the public transport over it.
package httpup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/wireconn"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

// ErrInvalidURL means an upstream's URL is not an absolute http(s) URL.
var ErrInvalidURL = errors.New("the upstream URL must be an absolute http or https URL")

// Config is an HTTP upstream (mcpproxy.HTTPUpstream's fields, its message
// limit resolved: negative, no limit).
type Config struct {
	URL             string
	Header          http.Header
	HTTPClient      *http.Client
	MaxMessageBytes int
}

// Connect validates the URL; the network is first used by the first
// message (initialize).
func Connect(ctx context.Context, t *Config) (mcp.Connection, error) {
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, ErrInvalidURL
	}
	base := t.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	big := newLargeState(t.MaxMessageBytes)
	big.endpointOK = func(data []byte) bool { return SameOriginRef(u, sdkEventData(data)) }
	rt := &RoundTripper{Next: base.Transport, Header: t.Header, big: big, Origin: u}
	if rt.Next == nil {
		rt.Next = http.DefaultTransport
	}
	client := *base
	client.Transport = rt
	client.CheckRedirect = checkRedirect(u, base.CheckRedirect)
	// The round tripper bounds every message (large.go); the
	// SDK's own bound would end the connection.
	st := &mcp.StreamableClientTransport{Endpoint: t.URL, HTTPClient: &client, MaxEventSize: -1}
	conn, err := st.Connect(ctx)
	if err != nil {
		return nil, err
	}
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Conn{t: t, client: &client, rt: rt, big: big, conn: conn, pctx: pctx, pcancel: pcancel,
		in: make(chan readResult), extra: make(chan jsonrpc.Message)}
	c.wire = wireconn.NewSDK(httpWire{c})
	return c, nil
}

// RoundTripper adds the configured headers and the negotiated
// protocol version to every request, remembers the status of the latest
// POST so that the transport can tell whether to fall back, and reads the
// server's messages through big.
type RoundTripper struct {
	Next     http.RoundTripper // makes the requests
	Header   http.Header       // added to every request to Origin
	Origin   *url.URL          // the upstream URL: headers go to its origin only (nil: every request)
	big      *largeState
	version  atomic.Value // string: the negotiated protocol version
	lastPOST atomic.Int64 // status of the latest POST
}

// RoundTrip implements http.RoundTripper.
func (rt *RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if rt.Origin == nil || sameOrigin(r.URL, rt.Origin) {
		for k, vs := range rt.Header {
			r.Header.Del(k)
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
	}
	if v, _ := rt.version.Load().(string); v != "" && r.Header.Get("Mcp-Protocol-Version") == "" {
		r.Header.Set("Mcp-Protocol-Version", v)
	}
	var callID json.RawMessage
	if req.Method == http.MethodPost {
		callID = requestID(req)
	}
	resp, err := rt.Next.RoundTrip(r)
	if err != nil {
		return nil, categorize(err)
	}
	if err := checkLocation(resp); err != nil {
		return nil, err
	}
	if req.Method == http.MethodPost {
		rt.lastPOST.Store(int64(resp.StatusCode))
	}
	if rt.big != nil {
		rt.big.wrap(resp, callID)
	}
	return resp, nil
}

// Conn is the Streamable HTTP connection, or, after a fallback,
// the HTTP+SSE one.
type Conn struct {
	t      *Config
	client *http.Client
	rt     *RoundTripper
	big    *largeState
	wire   *wireconn.SDK // the proxy's view (a wireconn.Conn), over httpWire

	mu      sync.Mutex // serializes the first write (the fallback decision)
	decided atomic.Bool
	conn    mcp.Connection
	initID  atomic.Value // jsonrpc.ID of the initialize request
	ready   chan struct{}
	once    sync.Once

	// After the decision, one goroutine reads the connection into in, and
	// the standalone stream (Streamable HTTP) sends into extra; both stop
	// when pctx ends (Close).
	pctx     context.Context
	pcancel  context.CancelFunc
	pump     sync.Once
	in       chan readResult
	extra    chan jsonrpc.Message
	openedSA atomic.Bool
	fellBack atomic.Bool
	workers  sync.WaitGroup
	starting sync.Mutex // held while a worker is added, so Close never waits concurrently with an Add
}

// startWorker runs f on a worker goroutine unless the connection is
// closed: Close waits for every worker started.
func (c *Conn) startWorker(f func()) {
	c.starting.Lock()
	defer c.starting.Unlock()
	if c.pctx.Err() != nil {
		return
	}
	c.workers.Add(1)
	go func() {
		defer c.workers.Done()
		f()
	}()
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

func (c *Conn) readyCh() chan struct{} {
	c.once.Do(func() { c.ready = make(chan struct{}) })
	return c.ready
}

// SessionID returns the upstream session id ("" before initialize, or for a
// server that assigns none).
func (c *Conn) SessionID() string { return c.current().SessionID() }

func (c *Conn) current() mcp.Connection {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn
}

// Read returns the next message from the server. A message over the limit
// comes as an error response to its request.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.read(ctx)
		if err != nil {
			return nil, err
		}
		placed, bad, _ := c.big.claim(msg)
		switch {
		case !placed:
			return msg, nil
		case bad != nil && bad.ID != nil:
			return &jsonrpc.Response{ID: msg.(*jsonrpc.Response).ID, Error: wiremsg.UpstreamError(bad)}, nil
		}
	}
}

// read waits for the first write's fallback decision, then reads from the
// chosen connection, learning the protocol version from the initialize
// response.
func (c *Conn) read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.pctx.Done():
		return nil, io.EOF
	case <-c.readyCh():
	}
	c.pump.Do(func() {
		conn := c.current()
		c.startWorker(func() {
			for {
				msg, err := conn.Read(c.pctx)
				select {
				case c.in <- readResult{msg, err}:
				case <-c.pctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
		})
	})
	var msg jsonrpc.Message
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.pctx.Done():
		// Closed: the pump may have stopped without handing over its error.
		return nil, io.EOF
	case msg = <-c.extra:
		return msg, nil
	case r := <-c.in:
		if r.err != nil {
			return nil, c.redact(r.err)
		}
		msg = r.msg
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil {
		if id, ok := c.initID.Load().(jsonrpc.ID); ok && id == resp.ID {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(resp.Result, &r) == nil && r.ProtocolVersion != "" {
				c.rt.version.Store(r.ProtocolVersion)
			}
			c.startStandalone()
		}
	}
	return msg, nil
}

// startStandalone opens the standalone stream once the upstream session
// exists (Streamable HTTP with a session id only).
func (c *Conn) startStandalone() {
	conn := c.current()
	sc, ok := conn.(interface{ SessionID() string })
	if !ok || c.fellBack.Load() || sc.SessionID() == "" || !c.openedSA.CompareAndSwap(false, true) {
		return
	}
	c.startWorker(func() { c.runStandalone(c.pctx, sc.SessionID(), c.extra) })
}

// Write sends msg; the first write decides whether the server speaks
// Streamable HTTP.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == wiremsg.MethodInitialize {
		c.initID.Store(req.ID)
	}
	return c.redact(c.write(ctx, msg))
}

func (c *Conn) write(ctx context.Context, msg jsonrpc.Message) error {
	if c.decided.Load() {
		return c.current().Write(ctx, msg)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decided.Load() {
		return c.conn.Write(ctx, msg)
	}
	req, isInit := msg.(*jsonrpc.Request)
	isInit = isInit && req.Method == wiremsg.MethodInitialize
	err := c.conn.Write(ctx, msg)
	if err != nil && !isInit {
		// Not decided yet: a newer client may first try server/discover,
		// which an HTTP+SSE server refuses too.
		return err
	}
	c.decided.Store(true)
	defer close(c.readyCh())
	if err == nil || !fallbackStatus(c.rt.lastPOST.Load()) {
		return err
	}
	sse := &mcp.SSEClientTransport{Endpoint: c.t.URL, HTTPClient: c.client, MaxEventSize: -1}
	conn, serr := sse.Connect(ctx)
	if serr != nil {
		if c.big.endpointRefused.Load() {
			return ErrEndpoint
		}
		return fmt.Errorf("mcpproxy: the upstream speaks neither Streamable HTTP nor HTTP+SSE: %w", err)
	}
	_ = c.conn.Close()
	c.conn = conn
	c.fellBack.Store(true)
	return c.conn.Write(ctx, msg)
}

// redact keeps the upstream URL (whose query may hold a key) out of error
// text; errors.Is and errors.As still reach the original.
func (c *Conn) redact(err error) error {
	if err == nil {
		return nil
	}
	if cat := Category(err); cat != nil {
		return &categorized{cat, err} // the SDK's text may quote the upstream's Location
	}
	msg := err.Error()
	red := strings.ReplaceAll(msg, c.t.URL, "<upstream URL>")
	if u, perr := url.Parse(c.t.URL); perr == nil && u.RawQuery != "" {
		red = strings.ReplaceAll(red, u.RawQuery, "<query>")
	}
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// fallbackStatus reports whether a refused initialize POST means the server
// may speak only the HTTP+SSE transport.
func fallbackStatus(status int64) bool {
	return status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusMethodNotAllowed
}

// Close closes the connection (for Streamable HTTP, ending the upstream
// session with DELETE).
func (c *Conn) Close() error {
	// A worker being added finishes its Add first; any later sees pctx
	// ended and starts none.
	c.starting.Lock()
	c.pcancel()
	c.starting.Unlock()
	err := c.current().Close()
	c.workers.Wait()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
