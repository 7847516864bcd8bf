package mcpproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawPOST sends one POST with the given headers (repeatable names) and
// returns the status and body.
func rawPOST(t testing.TB, u, body string, header ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	set := map[string]bool{}
	for i := 0; i+1 < len(header); i += 2 {
		k := http.CanonicalHeaderKey(header[i])
		if !set[k] {
			req.Header.Del(k)
			set[k] = true
		}
		req.Header.Add(k, header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestListenOriginChecks: every Origin header is checked; an origin on
// another port than the listener's is refused unless allowed; an allowed
// one is accepted, exactly.
func TestListenOriginChecks(t *testing.T) {
	r := newListenRig(t, false, &HTTPOptions{AllowOrigins: []string{"http://localhost:5173", "HTTPS://App.Example.com"}})
	u, _ := url.Parse(r.srv.URL)
	port := u.Port()
	cases := []struct {
		origins []string
		ok      bool
	}{
		{[]string{"http://127.0.0.1:" + port}, true},
		{[]string{"http://localhost:" + port}, true},
		{[]string{"http://[::1]:" + port}, true},
		{[]string{"http://localhost:5173"}, true},            // allowed
		{[]string{"https://app.example.com:443"}, true},      // allowed, default port spelled out
		{[]string{"http://localhost:3000"}, false},           // loopback, another port
		{[]string{"http://localhost"}, port == "80"},         // port 80
		{[]string{"https://localhost:" + port + "1"}, false}, // another port
		{[]string{"http://evil.example.com:" + port}, false},
		{[]string{"http://localhost:" + port, "http://evil.example.com"}, false}, // the second one counts
		{[]string{"http://localhost:" + port, "http://localhost:" + port}, true},
		{[]string{"null"}, false},
		{[]string{"http://localhost:5173/path"}, false},
		{[]string{"http://user@localhost:" + port}, false},
		{[]string{"ftp://localhost:" + port}, false},
	}
	for _, c := range cases {
		var h []string
		for _, o := range c.origins {
			h = append(h, "Origin", o)
		}
		status, body, _ := rawPOST(t, r.srv.URL, initialize, h...)
		if (status == http.StatusOK) != c.ok {
			t.Errorf("origins %q: %d %q, want ok=%v", c.origins, status, body, c.ok)
		}
		if !c.ok && (status != http.StatusForbidden || strings.Contains(body, "evil") || strings.Contains(body, "3000")) {
			t.Errorf("origins %q: %d %q", c.origins, status, body)
		}
	}
	if _, err := NewHTTPHandler(r.session, &HTTPOptions{AllowOrigins: []string{"localhost:5173"}}); !errors.Is(err, ErrInvalidOrigin) || !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("an origin without a scheme: %v", err)
	}
}

// TestListenPOSTNeedsJSON: a POST that is not application/json (a
// browser's simple request) is refused before a session, and its upstream,
// is started.
func TestListenPOSTNeedsJSON(t *testing.T) {
	r := newListenRig(t, false, nil)
	for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"} {
		status, body, _ := rawPOST(t, r.srv.URL, initialize, "Content-Type", ct)
		if status != http.StatusUnsupportedMediaType || !strings.Contains(body, "application/json") {
			t.Errorf("Content-Type %q: %d %q", ct, status, body)
		}
	}
	if n := r.h.Sessions(); n != 0 {
		t.Fatalf("%d sessions started by refused requests", n)
	}
	if status, _, _ := rawPOST(t, r.srv.URL, initialize, "Content-Type", "application/json; charset=utf-8"); status != http.StatusOK {
		t.Fatalf("application/json with a charset: %d", status)
	}
}

// TestListenBatchRefused: a JSON-RPC batch gets 400 whatever the session's
// protocol version (the SDK would serve one for 2025-03-26 and older).
func TestListenBatchRefused(t *testing.T) {
	r := newListenRig(t, false, nil)
	old := strings.Replace(initialize, "2025-06-18", "2025-03-26", 1)
	status, _, h := rawPOST(t, r.srv.URL, old)
	id := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d", status)
	}
	rawPOST(t, r.srv.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-03-26")
	for _, batch := range []string{`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, ` [{"jsonrpc":"2.0","method":"notifications/initialized"}]`, `[]`,
		strings.Repeat(" \n", 100) + `[{"jsonrpc":"2.0","id":9,"method":"ping"}]`} {
		status, body, _ := rawPOST(t, r.srv.URL, batch, "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-03-26")
		if status != http.StatusBadRequest || !strings.Contains(body, "batches are not supported") || !strings.Contains(body, `"code":-32600`) {
			t.Errorf("batch %q: %d %q", batch, status, body)
		}
	}
	if status, body, _ := rawPOST(t, r.srv.URL, `{"jsonrpc":"2.0","id":8,"method":"ping"}`, "Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-03-26"); status != http.StatusOK {
		t.Fatalf("ping after the batch: %d %q", status, body)
	}
}

// TestListenErrorBodiesCategorical: no error body quotes the request or
// names a Go type.
func TestListenErrorBodiesCategorical(t *testing.T) {
	r := newListenRig(t, false, nil)
	status, _, h := rawPOST(t, r.srv.URL, initialize)
	id := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d", status)
	}
	in := []string{"Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-06-18"}
	bodies := []string{
		`{"jsonrpc":"2.0","id":5,"method":"evil/marker"}`,
		`{"jsonrpc":"2.0","id":5,"method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":[1],"method":"evilmarker"}`,
		`{"jsonrpc":"2.0","id":1,"method":{"evilmarker":1}}`,
		`{"jsonrpc":"1.0","id":1,"method":"evilmarker"}`,
		"\"evilmarker\"",
		"evilmarker",
		"",
	}
	for _, b := range bodies {
		for _, hs := range [][]string{nil, in} {
			status, body, _ := rawPOST(t, r.srv.URL, b, hs...)
			if status < 400 {
				continue // accepted for the session
			}
			for _, bad := range []string{"evil", "marker", "wireDecode", "jsonrpc2", "unmarshal", "Go value", "json:"} {
				if strings.Contains(body, bad) {
					t.Errorf("%q (session %v): %d %q quotes %q", b, hs != nil, status, body, bad)
				}
			}
			if strings.Count(strings.TrimSpace(body), "\n") != 0 {
				t.Errorf("%q: %d %q is not one line", b, status, body)
			}
		}
	}
	// A GET with a malformed Last-Event-ID: the SDK quotes it.
	req, _ := http.NewRequest(http.MethodGet, r.srv.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Last-Event-ID", "evilmarker")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "evil") {
		t.Fatalf("GET with a bad Last-Event-ID: %d %q", resp.StatusCode, b)
	}
}

// TestListenSlowBody: a body trickling in (5 bytes/s) ends at the body
// deadline instead of holding its connection; a prompt one is served.
func TestListenSlowBody(t *testing.T) {
	r := newListenRig(t, false, &HTTPOptions{BodyTimeout: time.Second})
	addr := strings.TrimPrefix(r.srv.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, len(initialize))
	start := time.Now()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for i := 0; i < len(initialize); i++ {
			if _, err := c.Write([]byte{initialize[i]}); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within 20 s: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || time.Since(start) > 10*time.Second {
		t.Fatalf("slow body: %d after %v", resp.StatusCode, time.Since(start))
	}
	_ = c.Close()
	<-ended
	if status, _, _ := rawPOST(t, r.srv.URL, initialize); status != http.StatusOK {
		t.Fatalf("a prompt body: %d", status)
	}
}

func TestListenShortTokenRefused(t *testing.T) {
	for _, tok := range []string{"Q", "QQQQQQQQQQQQQQQ"} {
		if _, err := NewHTTPHandler(func(context.Context, string, string) (*Proxy, mcp.Transport, error) { return nil, nil, nil }, &HTTPOptions{Token: tok}); !errors.Is(err, ErrInvalidOptions) || strings.Contains(err.Error(), tok) {
			t.Errorf("token of %d bytes: %v", len(tok), err)
		}
	}
}
