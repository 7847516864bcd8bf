// Package httpguard holds the checks a local HTTP listener makes before a
// request reaches its handler (docs/security.md, "The listener and the
// upstream"): a loopback listener accepts only a loopback Host (against DNS
// rebinding), every Origin header must name the listener itself or an
// allowed origin, and a bearer token is compared in constant time. The MCP
// proxy's listener and the local view share them.
package httpguard

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// IsLoopback reports whether a host, or host:port, is localhost or a
// loopback IP address.
func IsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// IsLoopbackAddress reports whether a listen address (host:port) is bound to
// loopback only; an empty host (all interfaces) is not.
func IsLoopbackAddress(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && host != "" && IsLoopback(host)
}

// Origin returns an origin's canonical form (scheme://host:port, the
// default port spelled out), or false when s is not one.
func Origin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme != "http" && scheme != "https":
		return "", false
	case port == "" && scheme == "http":
		port = "80"
	case port == "":
		port = "443"
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}

// CheckOrigins checks every Origin header of r: each must be in allowed
// (canonical forms, see Origin), or name the listener itself (its port; on
// a loopback listener any loopback host, else the Host the request names).
func CheckOrigins(r *http.Request, allowed map[string]bool, loopback bool, port string) bool {
	for _, o := range r.Header.Values("Origin") {
		c, ok := Origin(o)
		if !ok {
			return false
		}
		if allowed[c] {
			continue
		}
		u, _ := url.Parse(c)
		if u.Port() != port {
			return false
		}
		if loopback {
			if !IsLoopback(u.Hostname()) {
				return false
			}
		} else if rh, _, err := net.SplitHostPort(r.Host); (err == nil && !strings.EqualFold(rh, u.Hostname())) ||
			(err != nil && !strings.EqualFold(r.Host, u.Hostname())) {
			return false
		}
	}
	return true
}

// Local returns whether the connection r arrived on is a loopback address,
// and its port ("" when the server did not record it).
func Local(r *http.Request) (loopback bool, port string) {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil {
		loopback = IsLoopback(local.String())
		_, port, _ = net.SplitHostPort(local.String())
	}
	return loopback, port
}

// BearerOK reports whether r carries Authorization: Bearer token, compared
// in constant time.
func BearerOK(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// HeaderName reports whether s is a valid HTTP header name (an RFC 9110
// token): the check of a configured request header (--header, a gateway
// server's headers).
func HeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
