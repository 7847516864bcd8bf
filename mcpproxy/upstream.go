package mcpproxy

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/httpup"
)

// The HTTP upstream transport, over the client below the SDK in package
// internal/httpup, and its categorical errors.

// ErrInvalidURL means an HTTPUpstream's URL is not an absolute http(s) URL.
var ErrInvalidURL = httpup.ErrInvalidURL

// Errors of an HTTPUpstream's requests. Their text is categorical: never a
// URL, a header or the server's bytes. See docs/security.md, "The listener
// and the upstream".
var (
	// ErrUpstreamRedirect means the upstream answered with a redirect to
	// another origin (scheme, host or port), which is never followed: the
	// configured headers and the request body stay with the upstream.
	ErrUpstreamRedirect = httpup.ErrRedirect
	// ErrUpstreamEndpoint means a 2024-11-05 HTTP+SSE upstream named a
	// message endpoint on another origin; the connection was ended.
	ErrUpstreamEndpoint = httpup.ErrEndpoint
	// ErrUpstreamMalformed means the upstream's HTTP response could not be
	// read as HTTP (a malformed status line or header).
	ErrUpstreamMalformed = httpup.ErrMalformed
	// ErrUpstreamRedirectLoop means the upstream kept redirecting within
	// its own origin, more than httpup.MaxRedirects (10) times.
	ErrUpstreamRedirectLoop = httpup.ErrRedirectLoop
)

// UpstreamCategory returns the categorical error of an HTTPUpstream's
// failure (ErrUpstreamRedirect, ErrUpstreamRedirectLoop,
// ErrUpstreamEndpoint or ErrUpstreamMalformed) when err wraps one, else
// nil. Its text is safe to show: it quotes nothing the upstream sent.
func UpstreamCategory(err error) error { return httpup.Category(err) }

// HTTPUpstream is an mcp.Transport to an MCP server over HTTP: Streamable
// HTTP (the official Go SDK's client transport, which resumes a dropped
// response stream when the server allows it), falling back to the 2024-11-05
// HTTP+SSE transport when the server refuses the first request (initialize)
// the way a server that speaks only that transport does (400, 404 or 405).
// The choice is made by the first message the server accepts, or by the
// initialize request.
type HTTPUpstream struct {
	// URL is the server's MCP endpoint (for the fallback, its SSE
	// endpoint).
	URL string
	// Header is added to every request. Its values are never logged or
	// put into errors.
	Header http.Header
	// HTTPClient makes the requests; nil means a client without timeout
	// (responses stream for as long as a tool runs).
	HTTPClient *http.Client
	// MaxMessageBytes bounds one message read from the server. Zero means
	// DefaultMaxMessageBytes; negative, no limit.
	MaxMessageBytes int
}

// Connect validates the URL; the network is first used by the first
// message (initialize).
func (t *HTTPUpstream) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxMessageBytes
	if limit == 0 {
		limit = DefaultMaxMessageBytes
	}
	return httpup.Connect(ctx, &httpup.Config{URL: t.URL, Header: t.Header, HTTPClient: t.HTTPClient, MaxMessageBytes: limit})
}
