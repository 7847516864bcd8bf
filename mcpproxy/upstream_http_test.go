package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerLog records one header of every request a test server receives.
type headerLog struct {
	mu   sync.Mutex
	seen []string
	name string
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Header.Get(l.name))
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) all(want string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.seen {
		if s != want {
			return false
		}
	}
	return len(l.seen) > 0
}

// httpUpstreamRig runs a proxy whose upstream is an HTTP server serving a
// fresh test upstream, for an in-memory client.
func httpUpstreamRig(t *testing.T, handler func(*upstream) http.Handler) (*rig, *httptest.Server, *headerLog) {
	t.Helper()
	up := newUpstream()
	log := &headerLog{name: "X-Api-Key"}
	srv := httptest.NewServer(log.wrap(handler(up)))
	t.Cleanup(func() { up.stop(); srv.Close() })
	p := proxyFor(t, openStore(t, "mem://"), owner("h1"), nil)
	proxyT, clientT := mcp.NewInMemoryTransports()
	r := &rig{up: up, proxy: p, done: make(chan error, 1)}
	ut := &HTTPUpstream{URL: srv.URL, Header: http.Header{"X-Api-Key": {"k-123"}}}
	go func() { r.done <- p.Run(context.Background(), ut, proxyT) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), clientT, nil)
	if err != nil {
		t.Fatalf("%v (proxy: %v)", err, <-r.done)
	}
	r.cs = cs
	t.Cleanup(func() { _ = cs.Close(); <-r.done })
	return r, srv, log
}

func streamable(up *upstream) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up.srv }, nil)
}

func sseOnly(up *upstream) http.Handler {
	return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return up.srv }, nil)
}

func TestHTTPUpstreamBoundsAndPages(t *testing.T) {
	for name, h := range map[string]func(*upstream) http.Handler{"streamable": streamable, "sse fallback": sseOnly} {
		t.Run(name, func(t *testing.T) {
			r, _, log := httpUpstreamRig(t, h)
			if got := texts(r.call(t, "small", nil)); got[0] != "hello" {
				t.Fatalf("small: %v", got)
			}
			want := text(50 * testThreshold)
			link := linkOf(t, r.call(t, "large", map[string]any{"size": len(want)}))
			if body := r.readAll(t, link.URI, testBudget); !bytes.Equal(body, []byte(want)) {
				t.Fatalf("paged body differs: %d bytes", len(body))
			}
			if !log.all("k-123") {
				t.Fatal("a request lacked the configured header")
			}
		})
	}
}

func TestHTTPUpstreamDropped(t *testing.T) {
	r, srv, _ := httpUpstreamRig(t, streamable)
	r.call(t, "small", nil)
	done := make(chan error, 1)
	go func() {
		_, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		done <- err
	}()
	<-r.up.slowStarted
	srv.CloseClientConnections()
	srv.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a call whose upstream dropped succeeded")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the pending call got no answer")
	}
}

func TestHTTPUpstreamBadURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x/mcp", "/relative", "http://"} {
		_, err := (&HTTPUpstream{URL: u}).Connect(context.Background())
		if !errors.Is(err, ErrInvalidURL) {
			t.Errorf("%q: %v", u, err)
		}
	}
	// A server that speaks neither transport.
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	p := proxyFor(t, openStore(t, "mem://"), owner("h2"), nil)
	proxyT, clientT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background(), &HTTPUpstream{URL: srv.URL}, proxyT) }()
	_, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), clientT, nil)
	if err == nil {
		t.Fatal("initialize through a server that speaks no MCP succeeded")
	}
	if err := <-done; !errors.Is(err, ErrUpstreamUnreachable) {
		t.Fatalf("Run: %v", err)
	}
}

func TestHTTPUpstreamErrorsHideTheURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL + "/mcp?key=sekrit-q"
	srv.Close() // nothing listens: the POST fails
	conn, err := (&HTTPUpstream{URL: u}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id, _ := jsonrpc.MakeID(1.0)
	err = conn.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "initialize", Params: []byte(`{}`)})
	if err == nil || strings.Contains(err.Error(), "sekrit") || strings.Contains(err.Error(), u) {
		t.Fatalf("error %v", err)
	}
}

// TestHTTPUpstreamUnreachableEndsTheSession: when the initialize request
// cannot reach an HTTP upstream (nothing listens), the client gets an error
// saying so and the run ends with the reason, without waiting for the
// client to leave.
func TestHTTPUpstreamUnreachableEndsTheSession(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/mcp"
	_ = l.Close()
	p := proxyFor(t, openStore(t, "mem://"), owner("h1"), nil)
	cr, cw := io.Pipe()
	defer cw.Close()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- p.Run(context.Background(), &HTTPUpstream{URL: url}, &Stream{Reader: cr, Writer: pw})
		_ = pw.Close()
	}()
	if _, err := io.WriteString(cw, initialize+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) || !strings.Contains(line, "could not be sent to the upstream MCP server") {
		t.Fatalf("initialize: %q %v", line, err)
	}
	if err := <-done; !errors.Is(err, ErrUpstreamUnreachable) || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), url) {
		t.Fatalf("Run: %v", err)
	}
}
