package mcpproxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestListenMaxSessions(t *testing.T) {
	before := goleak.IgnoreCurrent()
	r := newListenRig(t, false, &HTTPOptions{MaxSessions: 2})
	a := r.connect(t, nil)
	b := r.connect(t, nil)
	// Both busy: a third session is refused.
	ctx, cancel := context.WithCancel(context.Background())
	slow := func(c *rig) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
			done <- err
		}()
		return done
	}
	doneA, doneB := slow(a), slow(b)
	r.mu.Lock()
	ups := r.ups[:2]
	r.mu.Unlock()
	<-ups[0].slowStarted
	<-ups[1].slowStarted
	resp, body := post(t, r.srv.URL, "", initialize)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"code":-32001`) || !strings.Contains(body, "too many MCP sessions") {
		t.Fatalf("third session while both are busy: %d %s", resp.StatusCode, body)
	}
	cancel()
	<-doneA
	<-doneB
	// Idle now: a new session evicts one of them and its client gets 404.
	// Which one is the least recently used depends on when each client's
	// cancellation reached the server; TestListenEvictsLeastRecentlyUsed
	// checks the order where it is known.
	waitFor(t, func() bool { return r.h.idleSessions() == 2 })
	c := r.connectWhenIdle(t)
	c.call(t, "small", nil)
	_, errA := a.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "small", Arguments: map[string]any{}})
	_, errB := b.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "small", Arguments: map[string]any{}})
	if (errA == nil) == (errB == nil) {
		t.Fatalf("after a third session: a %v, b %v; want exactly one evicted", errA, errB)
	}
	if n := r.h.Sessions(); n != 2 {
		t.Fatalf("%d sessions", n)
	}
	r.finish(t, before)
}

// 100 clients that never end their sessions, then one more: it works, the
// live sessions stay at the limit, and an evicted client gets 404.
func TestListenClientsThatNeverDelete(t *testing.T) {
	r := newListenRig(t, false, &HTTPOptions{SessionRate: -1})
	var first string
	for i := range 100 {
		resp, _ := post(t, r.srv.URL, "", initialize)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("client %d: %d", i, resp.StatusCode)
		}
		if i == 0 {
			first = resp.Header.Get("Mcp-Session-Id")
		}
	}
	if n := r.h.Sessions(); n != DefaultMaxSessions {
		t.Fatalf("%d sessions, want %d", n, DefaultMaxSessions)
	}
	r.connect(t, nil).call(t, "small", nil)
	resp, _ := post(t, r.srv.URL, first, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("evicted session: %d", resp.StatusCode)
	}
}

// idleSessions counts the open sessions with no request in flight.
func (h *HTTPHandler) idleSessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.sessions {
		s.mu.Lock()
		if s.refs == 0 {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// TestListenEvictionBoundsUpstreams: clients that keep opening sessions
// never have more than MaxSessions upstreams running, however slowly an
// evicted session's upstream closes.
func TestListenEvictionBoundsUpstreams(t *testing.T) {
	r := newListenRig(t, false, nil)
	var mu sync.Mutex
	live, most := 0, 0
	h, err := NewHTTPHandler(func(ctx context.Context, id, cred string) (*Proxy, mcp.Transport, error) {
		p, up, err := r.session(ctx, id, cred)
		if err != nil {
			return nil, nil, err
		}
		mu.Lock()
		live++
		most = max(most, live)
		mu.Unlock()
		return p, slowClosing{up.(closing), func() {
			time.Sleep(50 * time.Millisecond) // an upstream slow to exit
			mu.Lock()
			live--
			mu.Unlock()
		}}, nil
	}, &HTTPOptions{MaxSessions: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	for i := range 8 {
		if resp, _ := post(t, srv.URL, "", initialize); resp.StatusCode != http.StatusOK {
			t.Fatalf("client %d: %d", i, resp.StatusCode)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 2 {
		t.Fatalf("%d upstreams ran at once, want at most 2", most)
	}
}

// slowClosing is closing whose connection runs closed after it closed.
type slowClosing struct {
	closing
	closed func()
}

func (c slowClosing) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.closing.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return closeHook{conn, c.closed}, nil
}

// Eviction picks, among one credential's sessions, the least recently used
// one with no request in flight, and never another credential's.
func TestListenEvictsLeastRecentlyUsed(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	sess := func(id, cred string, used time.Duration, refs int) *httpSession {
		return &httpSession{id: id, cred: cred, used: t0.Add(used), refs: refs}
	}
	h := &HTTPHandler{sessions: map[string]*httpSession{}}
	for _, s := range []*httpSession{
		sess("old-busy", "a", 0, 1), sess("old", "a", time.Second, 0), sess("new", "a", 2*time.Second, 0),
		sess("oldest-of-b", "b", -time.Hour, 0),
	} {
		h.sessions[s.id] = s
	}
	for _, want := range []string{"old", "new", ""} {
		got := h.evictIdle("a")
		if (got == nil && want != "") || (got != nil && got.id != want) {
			t.Fatalf("evicted %v, want %q", got, want)
		}
	}
	if _, ok := h.sessions["oldest-of-b"]; !ok || h.sessions["old-busy"] == nil {
		t.Fatal("evicted another credential's session or a busy one")
	}
}
