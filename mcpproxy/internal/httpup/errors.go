package httpup

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/hybridctx/hybridctx/internal/httpguard"
)

// Errors of an upstream's requests (mcpproxy.ErrUpstream…, the same
// values). Their text is categorical: never a URL, a header or the
// server's bytes. See docs/security.md, "The listener
// and the upstream".
var (
	// ErrRedirect means the upstream answered with a redirect to
	// another origin (scheme, host or port), which is never followed: the
	// configured headers and the request body stay with the upstream.
	ErrRedirect = errors.New("the upstream redirected to another origin; redirects are followed within the upstream's origin only")
	// ErrEndpoint means a 2024-11-05 HTTP+SSE upstream named a
	// message endpoint on another origin; the connection was ended.
	ErrEndpoint = errors.New("the upstream's HTTP+SSE endpoint is on another origin")
	// ErrMalformed means the upstream's HTTP response could not be
	// read as HTTP (a malformed status line or header).
	ErrMalformed = errors.New("the upstream's HTTP response is malformed")
	// ErrRedirectLoop means the upstream kept redirecting within its own
	// origin, more than MaxRedirects times.
	ErrRedirectLoop = fmt.Errorf("the upstream redirected more than %d times within its origin", MaxRedirects)
)

// upstreamCategories are the categorical errors above, in the order
// Category tries them.
var upstreamCategories = [...]error{ErrRedirect, ErrRedirectLoop, ErrEndpoint, ErrMalformed}

// Category returns the categorical error of an upstream's failure
// (ErrRedirect, ErrRedirectLoop, ErrEndpoint or ErrMalformed) when err
// wraps one, else
// nil. Its text is safe to show: it quotes nothing the upstream sent.
func Category(err error) error {
	for _, cat := range upstreamCategories {
		if errors.Is(err, cat) {
			return cat
		}
	}
	return nil
}

// MaxRedirects bounds the redirects followed within the upstream's origin.
const MaxRedirects = 10

// checkRedirect returns the CheckRedirect of an upstream at origin: a
// redirect to another origin is refused, and next (if any) decides the
// others.
func checkRedirect(origin *url.URL, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, origin) {
			return ErrRedirect
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= MaxRedirects {
			return ErrRedirectLoop
		}
		return nil
	}
}

// checkLocation refuses a redirect whose Location does not parse as a URL
// reference, as ErrMalformed: net/http's own error quotes the
// header. It closes the response's body when it refuses.
func checkLocation(resp *http.Response) error {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return nil
	}
	loc := resp.Header.Get("Location")
	if loc == "" || resp.Request == nil || resp.Request.URL == nil {
		return nil
	}
	if _, err := resp.Request.URL.Parse(loc); err != nil {
		_ = resp.Body.Close()
		return &categorized{ErrMalformed, err}
	}
	return nil
}

// sdkEventData returns an event's data as the SDK reads it: each data
// line trimmed of surrounding white space (data holds them joined by '\n',
// each without the one space after "data:"), so that the endpoint the
// origin check sees is the one the SDK will post to.
func sdkEventData(data []byte) string {
	var b strings.Builder
	for i, line := range bytes.Split(data, []byte{'\n'}) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.Write(bytes.TrimSpace(line))
	}
	return b.String()
}

// SameOriginRef reports whether ref, resolved against base (as the SDK
// resolves an endpoint event), has base's origin.
func SameOriginRef(base *url.URL, ref string) bool {
	u, err := base.Parse(ref)
	return err == nil && sameOrigin(u, base)
}

// categorized is an error whose text is its category's while errors.Is and
// errors.As still reach the original.
type categorized struct {
	cat error
	err error
}

func (e *categorized) Error() string   { return e.cat.Error() }
func (e *categorized) Unwrap() []error { return []error{e.cat, e.err} }

// categorize gives a request's failure categorical text: a response that
// is not HTTP becomes ErrMalformed (net/http quotes the bad line).
// Network, TLS and context errors are left as they are, for errors.Is.
func categorize(err error) error {
	var ne *net.OpError
	var dns *net.DNSError
	var rec tls.RecordHeaderError
	var cert *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ne), errors.As(err, &dns), errors.As(err, &rec), errors.As(err, &cert),
		errors.As(err, &unknown), errors.As(err, &host), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return err
	}
	// net/http's "transport connection broken: malformed …" quoting the
	// server's line, and any other protocol error.
	return &categorized{ErrMalformed, err}
}

// sameOrigin reports whether two absolute URLs share scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	x, ok1 := httpguard.Origin(a.Scheme + "://" + a.Host)
	y, ok2 := httpguard.Origin(b.Scheme + "://" + b.Host)
	return ok1 && ok2 && x == y
}
