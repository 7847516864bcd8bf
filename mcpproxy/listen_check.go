package mcpproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What an HTTPHandler checks before a request reaches a session: the
// Origin of browsers, the media type of a POST, the body (read within a
// deadline, one JSON-RPC message, never a batch) and what error text goes
// back. See docs/security.md, "The listener and the upstream".

// MinTokenBytes is the shortest bearer token an HTTPHandler accepts.
const MinTokenBytes = 16

// Defaults of the body deadline.
const (
	// DefaultBodyTimeout is the time a request body may take on top of
	// what its size allows at MinBodyRate.
	DefaultBodyTimeout = 30 * time.Second
	// MinBodyRate is the slowest rate, in bytes per second, a long request
	// body may arrive at.
	MinBodyRate = 64 << 10
)

// Categorical answers of the listener. None carries a header value, a body
// or a Go error: clients may be browsers of other origins.
const (
	msgBadOrigin    = "Forbidden: the Origin header names another origin (allow it with --allow-origin)"
	msgMediaType    = "Unsupported Media Type: a POST body must be Content-Type: application/json"
	msgNotOne       = "hybridctx: the body is not one JSON-RPC message"
	msgBatch        = "hybridctx: batches are not supported; send one JSON-RPC message per request"
	msgBodyTooSlow  = "Request Timeout: the body did not arrive in time"
	msgBodyUnread   = "Bad Request: cannot read the body"
	msgBadRequest   = "Bad Request: the request is not valid MCP over Streamable HTTP"
	msgServerFailed = "Internal Server Error: the MCP session could not serve the request"
)

// originOf returns an origin's canonical form (scheme://host:port, the
// default port spelled out), or false when s is not one.
func originOf(s string) (string, bool) {
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

// sameOrigin reports whether two absolute URLs share scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	x, ok1 := originOf(a.Scheme + "://" + a.Host)
	y, ok2 := originOf(b.Scheme + "://" + b.Host)
	return ok1 && ok2 && x == y
}

// checkOrigins checks every Origin header of r: each must be allowed
// explicitly, or name the listener itself (its port; on a loopback
// listener any loopback host, else the Host the request names).
func (h *HTTPHandler) checkOrigins(r *http.Request, loopback bool, port string) bool {
	for _, o := range r.Header.Values("Origin") {
		c, ok := originOf(o)
		if !ok {
			return false
		}
		if h.origins[c] {
			continue
		}
		u, _ := url.Parse(c)
		if u.Port() != port {
			return false
		}
		if loopback {
			if !isLoopback(u.Hostname()) {
				return false
			}
		} else if rh, _, err := net.SplitHostPort(r.Host); (err == nil && !strings.EqualFold(rh, u.Hostname())) ||
			(err != nil && !strings.EqualFold(r.Host, u.Hostname())) {
			return false
		}
	}
	return true
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

// jsonPOST reports whether a POST says its body is application/json.
func jsonPOST(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// readBody reads a POST body whole within its deadline (h.bodyTimeout plus
// what its length allows at MinBodyRate) and checks that it is one
// JSON-RPC message. On failure it answers the request and returns nil.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request) (jsonrpc.Message, []byte) {
	rc := http.NewResponseController(w)
	start := time.Now()
	deadline := func(n int64) {
		_ = rc.SetReadDeadline(start.Add(h.bodyTimeout + time.Duration(n)*time.Second/MinBodyRate))
	}
	deadline(0)
	body, err := io.ReadAll(&deadlineReader{r: r.Body, set: deadline})
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			http.Error(w, fmt.Sprintf("Request Entity Too Large: the body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		case errors.As(err, &ne) && ne.Timeout():
			w.Header().Set("Connection", "close")
			http.Error(w, msgBodyTooSlow, http.StatusRequestTimeout)
		default:
			http.Error(w, msgBodyUnread, http.StatusBadRequest)
		}
		return nil, nil
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, msgBatch)
		return nil, nil
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeParseError, msgNotOne)
		return nil, nil
	}
	return msg, body
}

// deadlineReader moves the read deadline on as the bytes come.
type deadlineReader struct {
	r   io.Reader
	n   int64
	set func(n int64)
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if n > 0 {
		d.n += int64(n)
		d.set(d.n)
	}
	return n, err
}

// plainErrors replaces the text of the session transport's plain-text
// error answers, which may quote the request (a method name, a header) or
// name Go types, by one categorical line unless the text is a fixed one.
type plainErrors struct {
	http.ResponseWriter
	status  int // a plain-text error status whose body is pending
	written bool
	swallow bool // the error was answered: the rest of its text is dropped
}

// fixedErrors are the transport's error texts that quote nothing.
var fixedErrors = map[string]bool{
	"Method Not Allowed": true,
	"Bad Request: this method requires an Mcp-Session-Id header":          true,
	"Content-Type must be 'application/json'":                             true,
	"Accept must contain both 'application/json' and 'text/event-stream'": true,
	"Accept must contain 'text/event-stream' for GET requests":            true,
	"can't send Last-Event-ID for POST request":                           true,
	"POST requires a non-empty body":                                      true,
	"stream replay unsupported":                                           true,
	"session is closing":                                                  true,
	"stream ID conflicts with ongoing stream":                             true,
}

func (w *plainErrors) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") && !w.written {
		w.status = status
		return
	}
	w.written = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *plainErrors) Write(p []byte) (int, error) {
	if w.swallow {
		return len(p), nil
	}
	if w.status == 0 {
		w.written = true
		return w.ResponseWriter.Write(p)
	}
	text := strings.TrimSpace(string(p))
	if !fixedErrors[text] {
		text = categoricalStatus(w.status)
	}
	w.flushError(text)
	return len(p), nil
}

// flushError writes the pending error with text.
func (w *plainErrors) flushError(text string) {
	status := w.status
	w.status, w.written, w.swallow = 0, true, true
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(status)
	_, _ = io.WriteString(w.ResponseWriter, text+"\n")
}

// finish writes an error whose body never came.
func (w *plainErrors) finish() {
	if w.status != 0 {
		w.flushError(categoricalStatus(w.status))
	}
}

func (w *plainErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *plainErrors) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// categoricalStatus is the line answering an error status.
func categoricalStatus(status int) string {
	switch {
	case status == http.StatusNotFound:
		return "Not Found: no such MCP session"
	case status >= 500:
		return msgServerFailed
	case status == http.StatusBadRequest:
		return msgBadRequest
	}
	return http.StatusText(status) + ": the request was refused"
}
