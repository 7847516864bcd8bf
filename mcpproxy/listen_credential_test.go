package mcpproxy

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	tokenA = "token-of-client-a-0123"
	tokenB = "token-of-client-b-4567"
)

// A client whose session was evicted starts a new one and still reads the
// references in its history: the owner follows the credential (here, the
// one credential of a listener without tokens), not the MCP session.
func TestListenEvictedClientKeepsReferences(t *testing.T) {
	r := startListenRig(t, &listenRig{store: openStore(t, "mem://"), byCredential: true}, &HTTPOptions{MaxSessions: 1})
	a := r.connect(t, nil)
	want := text(20 * testThreshold)
	link := linkOf(t, a.call(t, "large", map[string]any{"size": len(want)}))
	// Another client takes the only session: a's is evicted.
	waitFor(t, func() bool { return r.h.idleSessions() == 1 })
	r.connectWhenIdle(t).call(t, "small", nil)
	if _, err := a.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "small", Arguments: map[string]any{}}); err == nil {
		t.Fatal("the evicted session still answers")
	}
	// a re-initializes, as the MCP spec asks after a 404 (once the other
	// client's session has settled, the one slot is evictable).
	again := r.connectWhenIdle(t)
	if body := again.readAll(t, link.URI, 1000); !bytes.Equal(body, []byte(want)) {
		t.Fatalf("after eviction the reference reads %d bytes, want %d", len(body), len(want))
	}
}

// With credentials, each has its own sessions, limit and owner: one never
// evicts, uses or reads another's.
func TestListenCredentialCannotEvictAnother(t *testing.T) {
	r := startListenRig(t, &listenRig{store: openStore(t, "mem://"), byCredential: true}, &HTTPOptions{MaxSessions: 1,
		Credentials: []Credential{{Name: "a", Token: tokenA}, {Name: "b", Token: tokenB}}})
	b := r.connectAs(t, nil, tokenB)
	want := text(20 * testThreshold)
	link := linkOf(t, b.call(t, "large", map[string]any{"size": len(want)}))
	// a opens sessions in a loop: each ends a's previous one, never b's.
	var last *rig
	for range 5 {
		last = r.connectAs(t, nil, tokenA)
		last.call(t, "small", nil)
		waitFor(t, func() bool { return r.h.idleSessions() == r.h.Sessions() })
	}
	b.call(t, "small", nil)
	if n := r.h.Sessions(); n != 2 {
		t.Fatalf("%d sessions, want one per credential", n)
	}
	// a cannot use b's session id, nor read b's artifact.
	if resp, _ := post(t, r.srv.URL, b.cs.ID(), `{"jsonrpc":"2.0","id":7,"method":"ping"}`, "Authorization", "Bearer "+tokenA); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("credential a used b's session: %d", resp.StatusCode)
	}
	if res := last.call(t, "read_artifact", map[string]any{"reference": link.URI}); !res.IsError {
		t.Fatalf("credential a read b's artifact: %s", dump(res))
	}
	if body := b.readAll(t, link.URI, 1000); !bytes.Equal(body, []byte(want)) {
		t.Fatalf("b reads %d bytes, want %d", len(body), len(want))
	}
}

// fakeClock is an HTTPOptions.Now that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Session creation is rate-limited per credential: a burst, then the rate;
// over it, 429 with Retry-After, and another credential is not affected.
func TestListenSessionRate(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	r := newListenRig(t, false, &HTTPOptions{SessionBurst: 3, SessionRate: 0.5, MaxSessions: 100, Now: clock.Now,
		Credentials: []Credential{{Name: "a", Token: tokenA}, {Name: "b", Token: tokenB}}})
	open := func(token string) (*http.Response, string) {
		return post(t, r.srv.URL, "", initialize, "Authorization", "Bearer "+token)
	}
	for i := range 3 {
		if resp, body := open(tokenA); resp.StatusCode != http.StatusOK {
			t.Fatalf("session %d of the burst: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := open(tokenA)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" ||
		!strings.Contains(body, `"code":-32002`) || !strings.Contains(body, "too fast") || !strings.Contains(body, `"id":1`) {
		t.Fatalf("past the burst: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// The other credential has its own allowance.
	if resp, body := open(tokenB); resp.StatusCode != http.StatusOK {
		t.Fatalf("credential b: %d %s", resp.StatusCode, body)
	}
	// One session per two seconds after the burst.
	clock.advance(time.Second)
	if resp, _ := open(tokenA); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("half a token later: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	clock.advance(time.Second)
	if resp, body := open(tokenA); resp.StatusCode != http.StatusOK {
		t.Fatalf("a token later: %d %s", resp.StatusCode, body)
	}
	if resp, _ := open(tokenA); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the refill was spent: %d", resp.StatusCode)
	}
	// A long pause refills no more than the burst.
	clock.advance(time.Hour)
	for i := range 3 {
		if resp, _ := open(tokenA); resp.StatusCode != http.StatusOK {
			t.Fatalf("refilled burst, session %d: %d", i, resp.StatusCode)
		}
	}
	if resp, _ := open(tokenA); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("past the refilled burst: %d", resp.StatusCode)
	}
	// Requests within a session are never rate-limited.
	c := r.connectAs(t, nil, tokenB)
	for range 10 {
		c.call(t, "small", nil)
	}
}

// A listener without tokens rate-limits all its clients as one.
func TestListenSessionRateWithoutTokens(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	r := newListenRig(t, false, &HTTPOptions{SessionBurst: 2, Now: clock.Now})
	for i := range 2 {
		if resp, _ := post(t, r.srv.URL, "", initialize); resp.StatusCode != http.StatusOK {
			t.Fatalf("session %d: %d", i, resp.StatusCode)
		}
	}
	if resp, _ := post(t, r.srv.URL, "", initialize); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("past the burst: %d", resp.StatusCode)
	}
	clock.advance(time.Second / DefaultSessionRate)
	if resp, _ := post(t, r.srv.URL, "", initialize); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the default rate's interval: %d", resp.StatusCode)
	}
}

func TestListenCredentialOptionErrors(t *testing.T) {
	f := func(context.Context, string, string) (*Proxy, mcp.Transport, error) { return nil, nil, nil }
	for name, o := range map[string]*HTTPOptions{
		"token and credentials": {Token: tokenA, Credentials: []Credential{{Name: "b", Token: tokenB}}},
		"short token":           {Credentials: []Credential{{Name: "a", Token: tokenA}, {Name: "b", Token: "short"}}},
		"repeated token":        {Credentials: []Credential{{Name: "a", Token: tokenA}, {Name: "b", Token: tokenA}}},
		"negative burst":        {SessionBurst: -1},
		"NaN rate":              {SessionRate: math.NaN()},
		"infinite rate":         {SessionRate: math.Inf(1)},
	} {
		_, err := NewHTTPHandler(f, o)
		if !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(err.Error(), tokenA) || strings.Contains(err.Error(), tokenB) || strings.Contains(err.Error(), "short") {
			t.Fatalf("%s: the error names a token: %v", name, err)
		}
	}
}

// Two tokens of one name are one credential: they share its sessions.
func TestListenCredentialRotation(t *testing.T) {
	r := startListenRig(t, &listenRig{store: openStore(t, "mem://"), byCredential: true}, &HTTPOptions{
		Credentials: []Credential{{Name: "a", Token: tokenA}, {Name: "a", Token: tokenB}}})
	old := r.connectAs(t, nil, tokenA)
	link := linkOf(t, old.call(t, "large", map[string]any{"size": 20 * testThreshold}))
	if res := r.connectAs(t, nil, tokenB).call(t, "read_artifact", map[string]any{"reference": link.URI, "length": 100}); res.IsError {
		t.Fatalf("the new token of the same credential cannot read: %s", dump(res))
	}
	if resp, _ := post(t, r.srv.URL, old.cs.ID(), `{"jsonrpc":"2.0","id":7,"method":"ping"}`, "Authorization", "Bearer "+tokenB,
		"Mcp-Protocol-Version", "2025-06-18"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the same credential's session under its other token: %d", resp.StatusCode)
	}
}

// A tiny rate gives a long, finite Retry-After.
func TestListenSessionRateTiny(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	r := newListenRig(t, false, &HTTPOptions{SessionBurst: 1, SessionRate: 1e-300, Now: clock.Now})
	if resp, _ := post(t, r.srv.URL, "", initialize); resp.StatusCode != http.StatusOK {
		t.Fatalf("first session: %d", resp.StatusCode)
	}
	if resp, _ := post(t, r.srv.URL, "", initialize); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "86400" {
		t.Fatalf("second session: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
