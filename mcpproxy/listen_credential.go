package mcpproxy

import (
	"fmt"
	"net/http"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/listen"
)

// Who a listener's client is: the credential its requests carry, and how
// fast that credential may open sessions (the token match and the rate's
// buckets in package internal/listen). The owner of what a session
// stores follows the credential, never the MCP session (see
// docs/mcp-proxy.md, "Who owns what a listener stores").

// Defaults of the per-credential session rate.
const (
	// DefaultSessionBurst is how many sessions one credential may open at
	// once before DefaultSessionRate applies: room for a test suite that
	// opens one session per test (the MCP conformance suite has about 40).
	DefaultSessionBurst = 48
	// DefaultSessionRate is how many sessions per second one credential
	// may open after its burst.
	DefaultSessionRate = 2
)

// CodeSessionRate is the JSON-RPC error code of a new session refused
// (HTTP 429) because its credential opened sessions faster than
// HTTPOptions.SessionRate allows.
const CodeSessionRate = -32002

// A Credential is one bearer token an HTTPHandler accepts and the name of
// whom it identifies. The name is what the SessionFunc receives; it is no
// secret. Credentials with the same name are one credential (say, an old
// and a new token while rotating): they share sessions, limits and owner.
type Credential struct {
	Name  string
	Token string
}

// credentials checks the token options and returns the accepted
// credentials (none: every request is the one anonymous credential "").
func credentials(o HTTPOptions) ([]Credential, error) {
	if o.Token != "" && len(o.Credentials) > 0 {
		return nil, fmt.Errorf("%w: set Token or Credentials, not both", ErrInvalidOptions)
	}
	list := o.Credentials
	if o.Token != "" {
		list = []Credential{{Token: o.Token}}
	}
	seen := make(map[string]bool, len(list))
	for i, c := range list {
		switch {
		case len(c.Token) < MinTokenBytes:
			return nil, fmt.Errorf("%w: the bearer token of credential %d must be at least %d bytes", ErrInvalidOptions, i+1, MinTokenBytes)
		case seen[c.Token]:
			return nil, fmt.Errorf("%w: credential %d repeats an earlier bearer token", ErrInvalidOptions, i+1)
		}
		seen[c.Token] = true
	}
	return append([]Credential(nil), list...), nil
}

// credential returns the name of the credential r carries, or false when
// the listener needs one and r carries none it knows (listen.MatchToken).
func (h *HTTPHandler) credential(r *http.Request) (string, bool) {
	if len(h.creds) == 0 {
		return "", true
	}
	i, ok := listen.MatchToken(r, h.tokens)
	if !ok {
		return "", false
	}
	return h.creds[i].Name, true
}

// sessionsOf counts cred's open sessions. h.mu must be held.
func (h *HTTPHandler) sessionsOf(cred string) int {
	n := 0
	for _, s := range h.sessions {
		if s.cred == cred {
			n++
		}
	}
	return n
}
