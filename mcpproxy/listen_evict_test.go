package mcpproxy

import (
	"context"
	"net/http"
	"strings"
	"testing"

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
	// Idle now: a new session evicts the least recently used one (b was
	// used after a), and a's client gets 404.
	waitFor(t, func() bool { return r.h.idleSessions() == 2 })
	b.call(t, "small", nil)
	c := r.connect(t, nil)
	c.call(t, "small", nil)
	if _, err := a.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "small", Arguments: map[string]any{}}); err == nil {
		t.Fatal("the evicted session still answers")
	}
	b.call(t, "small", nil)
	if n := r.h.Sessions(); n != 2 {
		t.Fatalf("%d sessions", n)
	}
	r.finish(t, before)
}

// 100 clients that never end their sessions, then one more: it works, the
// live sessions stay at the limit, and an evicted client gets 404.
func TestListenClientsThatNeverDelete(t *testing.T) {
	r := newListenRig(t, false, nil)
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
