package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/httpup"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/listen"
)

// Fuzz targets of the HTTP surfaces: the listener's request handling and
// the HTTP upstream's response handling. The inputs of the adversarial
// probe of both are their seeds.

// goText is text of Go errors or types that no answer of the listener may
// carry.
var goText = []string{"jsonrpc2", "wireDecode", "unmarshal", "invalid character", "looking for beginning", "%!", "json: ", "Go value", "strconv"}

// fuzzMethods are the methods FuzzListenRequest sends.
var fuzzMethods = []string{http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodPut, http.MethodOptions, "PATCH", "BREW"}

// FuzzListenRequest: whatever the method, Origin, Content-Type, session,
// extra header and body, the listener answers with a valid status, never
// quotes a marked header value or Go error text in an error answer, never
// accepts a foreign origin, a POST that is not application/json or a batch,
// and keeps serving its open session.
func FuzzListenRequest(f *testing.F) {
	seeds := []struct {
		method          uint8
		origin, ct      string
		session         uint8
		extra           string
		body            string
		twoOrigins      bool
		protocolVersion bool
	}{
		{0, "", "application/json", 0, "", initialize, false, false},
		{0, "", "text/plain", 0, "", initialize, false, false},                                                       // a CORS simple request
		{0, "http://localhost:1", "application/json", 0, "", initialize, true, false},                                // a loopback origin, then a foreign one
		{0, "http://localhost:3000", "application/json", 0, "", initialize, false, false},                            // another port
		{0, "", "application/json", 1, "2025-03-26", `[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, false, true},      // a batch
		{0, "", "application/json", 1, "2025-06-18", `{"jsonrpc":"2.0","id":[1],"method":"x"}`, false, true},         // cannot unmarshal
		{0, "", "application/json", 1, "2025-06-18", `{"jsonrpc":"2.0","id":5,"method":"evil/method"}`, false, true}, // unknown method
		{0, "", "application/json", 1, "2025-06-18", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, false, true},  // served
		{0, "", "application/json", 2, "Mcp-Session-Id: abc\x01def", `{"jsonrpc":"2.0","id":5,"method":"ping"}`, false, false},
		{1, "", "", 2, "bad-event-id", "", false, false},
		{2, "", "", 2, "", "", false, false},
		{4, "http://evil.example.com", "", 0, "", "", false, false},
		{0, "null", "application/json", 0, "", initialize, false, false},
		{0, "", "application/json; charset=utf-8", 0, "", "{not json", false, false},
		{0, "", "application/json", 0, "", "", false, false},
	}
	for _, s := range seeds {
		f.Add(s.method, s.origin, s.ct, s.session, s.extra, []byte(s.body), s.twoOrigins, s.protocolVersion)
	}
	r := &listenRig{store: openStore(f, "mem://")}
	// Fuzzed initialize requests open sessions; a limit this high keeps the
	// session opened below from being evicted as the least recently used,
	// which the check at the end would take for a session that ended.
	h, err := NewHTTPHandler(r.session, &HTTPOptions{MaxRequestBytes: 64 << 10, MaxSessions: 1 << 20, SessionRate: -1})
	if err != nil {
		f.Fatal(err)
	}
	r.h = h
	r.srv = httptest.NewServer(h)
	f.Cleanup(func() { _ = h.Close(); r.srv.Close() })
	status, _, hdr := rawPOST(f, r.srv.URL, initialize)
	session := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || session == "" {
		f.Fatalf("initialize: %d", status)
	}
	local := r.srv.Listener.Addr()
	f.Fuzz(func(t *testing.T, method uint8, origin, ct string, sess uint8, extra string, body []byte, twoOrigins, pv bool) {
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		id := ""
		switch sess % 3 {
		case 1:
			if m == http.MethodPost { // GET would hold a stream, DELETE end the session
				id = session
			}
		case 2:
			id = "Zq" + extra
		}
		req := httptest.NewRequest(m, "http://"+local.String()+"/mcp", bytes.NewReader(body))
		ctx, cancel := context.WithTimeout(context.WithValue(req.Context(), http.LocalAddrContextKey, local), 2*time.Second)
		defer cancel()
		req = req.WithContext(ctx)
		set := func(k, v string) {
			if v != "" && !strings.ContainsAny(v, "\r\n") {
				req.Header.Add(k, v)
			}
		}
		set("Accept", "application/json, text/event-stream")
		set("Content-Type", ct)
		set("Origin", origin)
		if twoOrigins {
			set("Origin", "http://evil.example.com")
		}
		set("Mcp-Session-Id", id)
		if pv {
			set("Mcp-Protocol-Version", extra)
		} else {
			set("Last-Event-ID", "Zq"+extra)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		res := w.Result()
		out, _ := io.ReadAll(res.Body)
		if res.StatusCode < 200 || res.StatusCode > 599 {
			t.Fatalf("status %d", res.StatusCode)
		}
		ok := res.StatusCode < 300
		if ok && (twoOrigins || (origin != "" && !r.h.checkOrigins(req, true, portOf(local)))) {
			t.Fatalf("a foreign origin was served: %d", res.StatusCode)
		}
		if ok && m == http.MethodPost && !listen.JSONPOST(req) {
			t.Fatalf("a POST of %q was served", ct)
		}
		if ok && m == http.MethodPost && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")) {
			t.Fatal("a batch was served")
		}
		if res.StatusCode >= 400 {
			text := string(out)
			if strings.Contains(text, "Zq") {
				t.Fatalf("%d %q quotes a header", res.StatusCode, text)
			}
			for _, g := range goText {
				if strings.Contains(text, g) {
					t.Fatalf("%d %q shows Go text %q", res.StatusCode, text, g)
				}
			}
		}
		if r.h.lookup(session, "", false) == nil {
			t.Fatal("the open session ended")
		}
	})
}

func portOf(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}

// responder answers every request with one fuzzed raw HTTP response,
// parsed as the network would deliver it.
type responder struct {
	raw   []byte
	hosts *[]string // every request's host
}

func (r responder) RoundTrip(req *http.Request) (*http.Response, error) {
	*r.hosts = append(*r.hosts, req.URL.Host)
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	if req.Method != http.MethodPost {
		return nil, errors.New("no GET in this test")
	}
	return http.ReadResponse(bufio.NewReader(bytes.NewReader(r.raw)), req)
}

// FuzzUpstreamResponse: whatever an HTTP upstream answers to initialize
// (status line, headers, JSON body, event-stream framing, redirects), the
// connection never panics, never follows a redirect out of its origin, says
// what failed in categorical words only and hands the proxy only JSON-RPC
// messages, never a placeholder of its own.
func FuzzUpstreamResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`,
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {not json\n\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: endpoint\ndata: http://127.0.0.2:18999/msg\n\n",
		"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.2:18999/mcp\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 307 Temporary Redirect\r\nLocation: /mcp2\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nMcp-Session-Id: abc\x01def\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 abc OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{not json",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"hybridctxPlaceholder\":\"x\"}}\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var hops []string
		hc := &http.Client{Transport: responder{raw, &hops}}
		conn, err := (&HTTPUpstream{URL: "http://127.0.0.1:9/mcp", HTTPClient: hc, MaxMessageBytes: 1 << 20}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		id, _ := jsonrpc.MakeID(float64(1))
		werr := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: methodInitialize, Params: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)})
		for _, h := range hops {
			if h != "127.0.0.1:9" {
				t.Fatalf("followed a redirect to %q", h)
			}
		}
		if cat := UpstreamCategory(werr); cat != nil && werr.Error() != cat.Error() {
			t.Fatalf("%q is not categorical", werr)
		}
		if werr != nil {
			if s := werr.Error(); strings.Contains(s, "malformed MIME") || strings.Contains(s, "malformed HTTP") || strings.Contains(s, "127.0.0.2") {
				t.Fatalf("raw text: %q", s)
			}
			return
		}
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		b, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil && bytes.Contains(b, []byte("hybridctxPlaceholder")) &&
			bytes.Contains(resp.Result, conn.(*httpup.Conn).Placeholder()) {
			t.Fatalf("a placeholder reached the proxy: %s", b)
		}
	})
}
