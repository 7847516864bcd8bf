// Package listen holds what mcpproxy's HTTP listener checks and answers
// before a request reaches an MCP session, apart from the session table:
// the media type of a POST, its body (read within a deadline that moves
// with its bytes, one JSON-RPC message, never a batch), the categorical
// text of every error answer (the session transport's own texts may quote
// the request), the bearer token match in constant time, and the
// per-credential rate of new sessions. See docs/security.md, "The listener
// and the upstream".
package listen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MinBodyRate is the slowest rate, in bytes per second, a long request
// body may arrive at.
const MinBodyRate = 64 << 10

// Categorical answers of the listener. None carries a header value, a body
// or a Go error: clients may be browsers of other origins.
const (
	MsgBadOrigin    = "Forbidden: the Origin header names another origin (allow it with --allow-origin)"
	MsgMediaType    = "Unsupported Media Type: a POST body must be Content-Type: application/json"
	msgNotOne       = "hybridctx: the body is not one JSON-RPC message"
	msgBatch        = "hybridctx: batches are not supported; send one JSON-RPC message per request"
	msgBodyTooSlow  = "Request Timeout: the body did not arrive in time"
	msgBodyUnread   = "Bad Request: cannot read the body"
	msgBadRequest   = "Bad Request: the request is not valid MCP over Streamable HTTP"
	msgServerFailed = "Internal Server Error: the MCP session could not serve the request"
)

// JSONPOST reports whether a POST says its body is application/json.
func JSONPOST(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// ReadBody reads a POST body whole within its deadline (timeout plus what
// its length allows at MinBodyRate) and checks that it is one JSON-RPC
// message. On failure it answers the request and returns nil.
func ReadBody(w http.ResponseWriter, r *http.Request, timeout time.Duration) (jsonrpc.Message, []byte) {
	rc := http.NewResponseController(w)
	start := time.Now()
	deadline := func(n int64) {
		_ = rc.SetReadDeadline(start.Add(timeout + time.Duration(n)*time.Second/MinBodyRate))
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
		WriteRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, msgBatch)
		return nil, nil
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		WriteRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeParseError, msgNotOne)
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

// PlainErrors replaces the text of the session transport's plain-text
// error answers, which may quote the request (a method name, a header) or
// name Go types, by one categorical line unless the text is a fixed one.
type PlainErrors struct {
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

func (w *PlainErrors) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") && !w.written {
		w.status = status
		return
	}
	w.written = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *PlainErrors) Write(p []byte) (int, error) {
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
func (w *PlainErrors) flushError(text string) {
	status := w.status
	w.status, w.written, w.swallow = 0, true, true
	w.Header().Del("Content-Length")
	w.ResponseWriter.WriteHeader(status)
	_, _ = io.WriteString(w.ResponseWriter, text+"\n")
}

// Finish writes an error whose body never came; call it once the request
// is served.
func (w *PlainErrors) Finish() {
	if w.status != 0 {
		w.flushError(categoricalStatus(w.status))
	}
}

func (w *PlainErrors) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *PlainErrors) Flush() {
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

// WriteRPCError answers with a JSON-RPC error response.
func WriteRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	if !id.IsValid() {
		// A response to nothing identifiable carries "id": null.
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) == nil {
			m["id"] = json.RawMessage("null")
			if b, err := json.Marshal(m); err == nil {
				body = b
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
