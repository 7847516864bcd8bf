package mcpproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/httpup"
)

// The HTTP upstream against hostile servers, all on loopback: redirects
// and endpoints naming another origin, malformed events, bodies, status
// lines and headers.

const (
	secretKey    = "k-secret-header-1"
	secretBearer = "Bearer b-secret-header-2"
)

// trap is a loopback server that records every request it receives.
type trap struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

// newTrap listens on host (127.0.0.2 when the system routes it, else
// 127.0.0.1 on another port).
func newTrap(t *testing.T, host string) *trap {
	t.Helper()
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	tr := &trap{}
	tr.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		tr.mu.Lock()
		tr.seen = append(tr.seen, fmt.Sprintf("%s %s %v %s", r.Method, r.URL, r.Header, b))
		tr.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	tr.srv.Listener.Close()
	tr.srv.Listener = l
	tr.srv.Start()
	t.Cleanup(tr.srv.Close)
	return tr
}

func (tr *trap) requests() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.seen...)
}

// connectThrough runs a proxy over an HTTPUpstream at u with secret
// headers and returns the client's initialize error and Run's result.
func connectThrough(t *testing.T, u string) (error, error) {
	t.Helper()
	p := proxyFor(t, openStore(t, "mem://"), owner("sec"), nil)
	proxyT, clientT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	up := &HTTPUpstream{URL: u, Header: http.Header{"X-Api-Key": {secretKey}, "Authorization": {secretBearer}}}
	go func() { done <- p.Run(context.Background(), up, proxyT) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err == nil {
		_ = cs.Close()
	}
	select {
	case runErr := <-done:
		return err, runErr
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not end")
	}
	return nil, nil
}

// TestHTTPUpstreamRedirects: a redirect to another origin (host, port or
// scheme) is never followed, no configured header or body goes there, and
// the error names no URL; a redirect within the origin is followed.
func TestHTTPUpstreamRedirects(t *testing.T) {
	other := newTrap(t, "127.0.0.2")
	port := newTrap(t, "127.0.0.1")
	targets := []string{other.srv.URL + "/mcp", port.srv.URL + "/mcp", "https://" + strings.TrimPrefix(port.srv.URL, "http://") + "/mcp",
		"ftp://127.0.0.1/mcp", "//" + strings.TrimPrefix(other.srv.URL, "http://") + "/mcp"}
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound, http.StatusMovedPermanently} {
		for _, target := range targets {
			src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target, code)
			}))
			cerr, runErr := connectThrough(t, src.URL+"/mcp")
			src.Close()
			if cerr == nil || !errors.Is(runErr, ErrUpstreamUnreachable) || !errors.Is(runErr, ErrUpstreamRedirect) {
				t.Fatalf("%d to %s: connect %v, run %v", code, target, cerr, runErr)
			}
			for _, leak := range []string{other.srv.URL, port.srv.URL, "ftp://", secretKey} {
				if strings.Contains(runErr.Error(), leak) && leak != "" {
					t.Fatalf("%d to %s: the error names %q: %v", code, target, leak, runErr)
				}
			}
		}
	}
	for _, tr := range []*trap{other, port} {
		if seen := tr.requests(); len(seen) > 0 {
			t.Fatalf("the other origin received %d requests: %.300s", len(seen), seen[0])
		}
	}
	// Within the origin, the redirect is followed with the headers.
	up := newUpstream()
	defer up.stop()
	real := streamable(up)
	log := &headerLog{name: "X-Api-Key"}
	same := httptest.NewServer(log.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
			return
		}
		real.ServeHTTP(w, r)
	})))
	defer same.Close()
	p := proxyFor(t, openStore(t, "mem://"), owner("sec"), nil)
	proxyT, clientT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() {
		done <- p.Run(context.Background(), &HTTPUpstream{URL: same.URL + "/old", Header: http.Header{"X-Api-Key": {secretKey}}}, proxyT)
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), clientT, nil)
	if err != nil {
		t.Fatalf("same-origin redirect: %v (%v)", err, <-done)
	}
	_ = cs.Close()
	<-done
	if !log.all(secretKey) {
		t.Fatal("a same-origin request lacked the header")
	}
}

// TestHTTPUpstreamRedirectLoop: an upstream that keeps redirecting within
// its origin ends the run with ErrUpstreamRedirectLoop, whose text quotes
// none of its Location values.
func TestHTTPUpstreamRedirectLoop(t *testing.T) {
	var hops atomic.Int64
	loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hops.Add(1)
		http.Redirect(w, r, "/Marker-"+strconv.FormatInt(n, 10), http.StatusTemporaryRedirect)
	}))
	defer loop.Close()
	cerr, runErr := connectThrough(t, loop.URL+"/mcp")
	if cerr == nil || !errors.Is(runErr, ErrUpstreamRedirectLoop) || UpstreamCategory(runErr) != ErrUpstreamRedirectLoop {
		t.Fatalf("connect %v, run %v", cerr, runErr)
	}
	if strings.Contains(runErr.Error(), "Marker") || strings.Contains(runErr.Error(), loop.URL) {
		t.Fatalf("the error quotes the upstream: %v", runErr)
	}
	// The Streamable HTTP POST and the HTTP+SSE fallback's GET each follow
	// at most maxRedirects redirects.
	if n := hops.Load(); n > 2*(httpup.MaxRedirects+1) {
		t.Fatalf("%d requests, want at most %d", n, 2*(httpup.MaxRedirects+1))
	}
}

// TestHTTPUpstreamBadLocation: a redirect whose Location is not a URL ends
// the run with ErrUpstreamMalformed, whose text does not quote it.
func TestHTTPUpstreamBadLocation(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", ":Marker")
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer bad.Close()
	cerr, runErr := connectThrough(t, bad.URL+"/mcp")
	if cerr == nil || !errors.Is(runErr, ErrUpstreamMalformed) || strings.Contains(runErr.Error(), "Marker") {
		t.Fatalf("connect %v, run %v", cerr, runErr)
	}
}

// TestHTTPUpstreamHeadersStayHome: even a request the round tripper is
// asked to send to another origin carries no configured header.
func TestHTTPUpstreamHeadersStayHome(t *testing.T) {
	other := newTrap(t, "127.0.0.2")
	home, _ := url.Parse("http://127.0.0.1:1/mcp")
	rt := &httpup.RoundTripper{Next: http.DefaultTransport, Header: http.Header{"X-Api-Key": {secretKey}}, Origin: home}
	resp, err := (&http.Client{Transport: rt}).Get(other.srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if seen := other.requests(); len(seen) != 1 || strings.Contains(seen[0], secretKey) {
		t.Fatalf("%q", seen)
	}
}

// sseEndpointServer speaks only the 2024-11-05 transport: POST gets 404,
// GET an endpoint event naming endpoint.
func sseEndpointServer(endpoint string) *httptest.Server {
	return sseEventServer("event: endpoint\ndata: " + endpoint + "\n\n")
}

// sseEventServer answers a GET with the raw event stream text event.
func sseEventServer(event string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, event)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
}

// TestHTTPUpstreamSSEEndpointOrigin: an endpoint event naming another
// origin ends the connection with a categorical error; nothing reaches the
// other origin.
func TestHTTPUpstreamSSEEndpointOrigin(t *testing.T) {
	other := newTrap(t, "127.0.0.2")
	port := newTrap(t, "127.0.0.1")
	for _, ep := range []string{other.srv.URL + "/msg", port.srv.URL + "/msg", "//" + strings.TrimPrefix(other.srv.URL, "http://") + "/msg",
		"https://127.0.0.1/msg", "ftp://127.0.0.1/msg"} {
		srv := sseEndpointServer(ep)
		cerr, runErr := connectThrough(t, srv.URL+"/sse")
		srv.Close()
		if cerr == nil || !errors.Is(runErr, ErrUpstreamEndpoint) {
			t.Fatalf("endpoint %s: connect %v, run %v", ep, cerr, runErr)
		}
		if strings.Contains(runErr.Error(), ep) || strings.Contains(runErr.Error(), "127.0.0.2") {
			t.Fatalf("endpoint %s: the error names it: %v", ep, runErr)
		}
	}
	// White space the SDK trims from the event's name and data.
	host := strings.TrimPrefix(other.srv.URL, "http://")
	for _, ev := range []string{"event: endpoint \ndata: " + other.srv.URL + "/msg\n\n", "event:\tendpoint\ndata: " + other.srv.URL + "/msg\n\n",
		"event: endpoint\ndata:  //" + host + "/msg\n\n", "event: endpoint\ndata: \t//" + host + "/msg \n\n"} {
		srv := sseEventServer(ev)
		cerr, runErr := connectThrough(t, srv.URL+"/sse")
		srv.Close()
		if cerr == nil || !errors.Is(runErr, ErrUpstreamEndpoint) {
			t.Fatalf("event %q: connect %v, run %v", ev, cerr, runErr)
		}
	}
	for _, tr := range []*trap{other, port} {
		if seen := tr.requests(); len(seen) > 0 {
			t.Fatalf("the other origin received %d requests: %.300s", len(seen), seen[0])
		}
	}
	base, _ := url.Parse("http://127.0.0.1:8080/sse?k=1")
	for ref, want := range map[string]bool{"/msg?s=1": true, "?sessionid=x": true, "msg": true, "http://127.0.0.1:8080/m": true,
		"HTTP://127.0.0.1:8080/m": true, "http://127.0.0.1/m": false, "http://localhost:8080/m": false, "//evil:8080/m": false,
		"https://127.0.0.1:8080/m": false, "http://127.0.0.1:8080@evil/m": false, "%zz": false} {
		if got := httpup.SameOriginRef(base, ref); got != want {
			t.Errorf("%q: %v, want %v", ref, got, want)
		}
	}
}

// brokenToolServer serves up, except that a tools/call of "broken" is
// answered with answer (content type ct).
func brokenToolServer(up *upstream, ct, answer string) http.Handler {
	real := streamable(up)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			if bytes.Contains(b, []byte(`"name":"broken"`)) {
				w.Header().Set("Content-Type", ct)
				io.WriteString(w, answer)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		real.ServeHTTP(w, r)
	})
}

// TestHTTPUpstreamMalformedAnswer: one malformed event (or JSON body) on a
// tools/call answer gets that call a JSON-RPC error and one categorical
// warning; the session goes on.
func TestHTTPUpstreamMalformedAnswer(t *testing.T) {
	for name, c := range map[string][2]string{
		"event":         {"text/event-stream", "data: {not json\n\n"},
		"event with id": {"text/event-stream", "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{not json\n\n"},
		"event array":   {"text/event-stream", "event: message\ndata: [1,2]\n\n"},
		"json body":     {"application/json", "{not json"},
		"empty body":    {"application/json", ""},
	} {
		t.Run(name, func(t *testing.T) {
			var logged bytes.Buffer
			var mu sync.Mutex
			r, _, _ := httpUpstreamRig(t, func(up *upstream) http.Handler { return brokenToolServer(up, c[0], c[1]) })
			r.proxy.log = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))
			r.call(t, "small", nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "broken", Arguments: map[string]any{}})
			if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "not a valid JSON-RPC message") {
				t.Fatalf("broken call: %v", err)
			}
			if got := texts(r.call(t, "small", nil)); got[0] != "hello" {
				t.Fatalf("after: %v", got)
			}
			select {
			case err := <-r.done:
				t.Fatalf("the proxy ended: %v", err)
			default:
			}
			mu.Lock()
			defer mu.Unlock()
			if n := strings.Count(logged.String(), "\n"); n != 1 || strings.Contains(logged.String(), "not json") {
				t.Fatalf("%d warnings: %q", n, logged.String())
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// rawHTTPServer answers every request on a loopback connection with resp.
func rawHTTPServer(t *testing.T, resp string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, _ = c.Read(buf)
				_, _ = io.WriteString(c, resp)
			}()
		}
	}()
	return "http://" + l.Addr().String() + "/mcp"
}

// TestHTTPUpstreamMalformedHTTP: a malformed status line or header line
// ends in ErrUpstreamMalformed, whose text quotes none of it.
func TestHTTPUpstreamMalformedHTTP(t *testing.T) {
	for _, resp := range []string{
		"HTTP/1.1 abc OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nMcp-Session-Id: abc\x01def\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-Marker abcdef\r\nContent-Length: 0\r\n\r\n",
		"garbage-abcdef\r\n\r\n",
	} {
		u := rawHTTPServer(t, resp)
		cerr, runErr := connectThrough(t, u)
		if cerr == nil || !errors.Is(runErr, ErrUpstreamMalformed) || strings.Contains(runErr.Error(), "abc") || strings.Contains(runErr.Error(), "Marker") {
			t.Fatalf("%q: connect %v, run %v", resp, cerr, runErr)
		}
	}
}
