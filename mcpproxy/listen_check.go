package mcpproxy

import (
	"fmt"
	"net/http"
	"time"

	"github.com/hybridctx/hybridctx/internal/httpguard"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/listen"
)

// What an HTTPHandler checks before a request reaches a session: the
// Origin of browsers here (over internal/httpguard); the media type of a
// POST, the body (read within a deadline, one JSON-RPC message, never a
// batch) and what error text goes back in package internal/listen. See
// docs/security.md, "The listener and the upstream".

// MinTokenBytes is the shortest bearer token an HTTPHandler accepts.
const MinTokenBytes = 16

// Defaults of the body deadline.
const (
	// DefaultBodyTimeout is the time a request body may take on top of
	// what its size allows at MinBodyRate.
	DefaultBodyTimeout = 30 * time.Second
	// MinBodyRate is the slowest rate, in bytes per second, a long request
	// body may arrive at.
	MinBodyRate = listen.MinBodyRate
)

// originOf returns an origin's canonical form (scheme://host:port, the
// default port spelled out), or false when s is not one.
func originOf(s string) (string, bool) { return httpguard.Origin(s) }

// checkOrigins checks every Origin header of r: each must be allowed
// explicitly, or name the listener itself (its port; on a loopback
// listener any loopback host, else the Host the request names).
func (h *HTTPHandler) checkOrigins(r *http.Request, loopback bool, port string) bool {
	return httpguard.CheckOrigins(r, h.origins, loopback, port)
}

// ErrInvalidOrigin is the error of an HTTPOptions.AllowOrigins entry that
// is not scheme://host[:port]; it wraps ErrInvalidOptions.
var ErrInvalidOrigin = fmt.Errorf("%w: an allowed origin must be scheme://host[:port]", ErrInvalidOptions)

// normalizeOrigins returns the canonical forms of allowed origins.
func normalizeOrigins(list []string) (map[string]bool, error) {
	m := map[string]bool{}
	for _, s := range list {
		c, ok := originOf(s)
		if !ok {
			return nil, ErrInvalidOrigin
		}
		m[c] = true
	}
	return m, nil
}
