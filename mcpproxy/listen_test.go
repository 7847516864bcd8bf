package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/httpup"
	"github.com/hybridctx/hybridctx/workspace"
)

// listenRig is an HTTPHandler on a loopback httptest server whose sessions
// wrap either an in-process upstream or a helper process.
type listenRig struct {
	h     *HTTPHandler
	srv   *httptest.Server
	store *workspace.Store

	mu    sync.Mutex
	cmds  []*exec.Cmd
	ups   []*upstream
	css   []*mcp.ClientSession
	n     int
	procs bool // upstream is a helper process per session
	// byCredential gives each credential one owner (as hybridctx mcp
	// does), instead of one owner per session.
	byCredential bool
}

func newListenRig(t *testing.T, procs bool, opts *HTTPOptions) *listenRig {
	t.Helper()
	return startListenRig(t, &listenRig{store: openStore(t, "mem://"), procs: procs}, opts)
}

func startListenRig(t *testing.T, r *listenRig, opts *HTTPOptions) *listenRig {
	t.Helper()
	h, err := NewHTTPHandler(r.session, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.h = h
	r.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		r.srv.Close()
	})
	return r
}

// session gives every session its own upstream, and its own owner unless
// r.byCredential.
func (r *listenRig) session(_ context.Context, _, cred string) (*Proxy, mcp.Transport, error) {
	r.mu.Lock()
	r.n++
	n := r.n
	r.mu.Unlock()
	o := owner(fmt.Sprintf("http-%d", n))
	if r.byCredential {
		o = owner("credential-" + cred)
	}
	p, err := sessionProxy(r.store, o)
	if err != nil {
		return nil, nil, err
	}
	if r.procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=serve")
		r.mu.Lock()
		r.cmds = append(r.cmds, cmd)
		r.mu.Unlock()
		return p, &Command{Cmd: cmd, TerminateDuration: time.Second}, nil
	}
	up := newUpstream()
	r.mu.Lock()
	r.ups = append(r.ups, up)
	r.mu.Unlock()
	srvT, upT := mcp.NewInMemoryTransports()
	ss, err := up.srv.Connect(context.Background(), srvT, nil)
	if err != nil {
		return nil, nil, err
	}
	go func() { _ = ss.Wait() }()
	return p, closing{upT, ss, up}, nil
}

// closing is an in-memory upstream transport that ends its server session
// when the proxy closes it.
type closing struct {
	mcp.Transport
	ss *mcp.ServerSession
	up *upstream
}

func (c closing) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return closeHook{conn, func() { c.up.stop(); _ = c.ss.Close() }}, nil
}

type closeHook struct {
	mcp.Connection
	hook func()
}

func (c closeHook) Close() error { err := c.Connection.Close(); c.hook(); return err }

// sessionProxy is proxyFor without a testing.TB (it runs on the handler's
// goroutines).
func sessionProxy(store *workspace.Store, o artifact.Owner) (*Proxy, error) {
	bind, err := hybridctx.NewBinding(o, store)
	if err != nil {
		return nil, err
	}
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	if err != nil {
		return nil, err
	}
	reh, err := hybridctx.NewRehydrator(bind, nil)
	if err != nil {
		return nil, err
	}
	return NewProxy(off, reh, &Options{Budget: testBudget})
}

// connect opens an MCP session over HTTP with the Go SDK's client.
func (r *listenRig) connect(t *testing.T, opts *mcp.ClientOptions) *rig {
	t.Helper()
	return r.connectAs(t, opts, "")
}

// connectAs is connect with a bearer token ("" sends none).
func (r *listenRig) connectAs(t *testing.T, opts *mcp.ClientOptions, token string) *rig {
	t.Helper()
	cs, err := r.tryConnect(opts, token)
	if err != nil {
		t.Fatal(err)
	}
	return r.keep(t, cs)
}

// tryConnect opens a client session, or says why it could not.
func (r *listenRig) tryConnect(opts *mcp.ClientOptions, token string) (*mcp.ClientSession, error) {
	cl := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: r.srv.URL, MaxRetries: -1}
	if token != "" {
		tr.HTTPClient = &http.Client{Transport: &httpup.RoundTripper{Next: http.DefaultTransport, Header: http.Header{"Authorization": {"Bearer " + token}}}}
	}
	return cl.Connect(context.Background(), tr, nil)
}

// connectWhenIdle connects as a client would that is told every session is
// busy: it tries again, a bounded number of times, once a session is idle.
// A client's last request can still be ending on the server after the
// client has its answer.
func (r *listenRig) connectWhenIdle(t *testing.T) *rig {
	t.Helper()
	var err error
	for range 20 {
		var cs *mcp.ClientSession
		if cs, err = r.tryConnect(nil, ""); err == nil {
			return r.keep(t, cs)
		}
		if !strings.Contains(err.Error(), "every one busy") {
			break
		}
		waitFor(t, func() bool { return r.h.idleSessions() > 0 })
	}
	t.Fatal(err)
	return nil
}

// keep registers cs with the rig and closes it when the test ends.
func (r *listenRig) keep(t *testing.T, cs *mcp.ClientSession) *rig {
	t.Cleanup(func() { _ = cs.Close() })
	r.mu.Lock()
	r.css = append(r.css, cs)
	r.mu.Unlock()
	return &rig{cs: cs}
}

// finish ends every client, session and upstream now, then checks that no
// goroutine is left behind.
func (r *listenRig) finish(t *testing.T, before goleak.Option) {
	t.Helper()
	r.mu.Lock()
	css := r.css
	r.mu.Unlock()
	for _, cs := range css {
		_ = cs.Close()
	}
	_ = r.h.Close()
	r.srv.Close()
	http.DefaultClient.CloseIdleConnections()
	goleak.VerifyNone(t, before)
}

func TestListenBoundsPagesAndIsolates(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	r := newListenRig(t, false, nil)
	a, b := r.connect(t, nil), r.connect(t, nil)
	if got := a.call(t, "small", nil); texts(got)[0] != "hello" {
		t.Fatalf("small result changed: %s", dump(got))
	}
	want := text(20 * testThreshold)
	res := a.call(t, "large", map[string]any{"size": len(want)})
	link := linkOf(t, res)
	if body := a.readAll(t, link.URI, 1000); !bytes.Equal(body, []byte(want)) {
		t.Fatalf("paged body differs: %d bytes, want %d", len(body), len(want))
	}
	// The other session is another owner: it cannot read a's artifact.
	other := b.call(t, "read_artifact", map[string]any{"reference": link.URI})
	if !other.IsError {
		t.Fatalf("session b read session a's artifact: %s", dump(other))
	}
	if n := r.h.Sessions(); n != 2 {
		t.Fatalf("Sessions() = %d, want 2", n)
	}
	_ = a.cs.Close()
	_ = b.cs.Close()
	waitFor(t, func() bool { return r.h.Sessions() == 0 })
	_ = r.h.Close()
	r.srv.Close()
	http.DefaultClient.CloseIdleConnections()
}

func TestListenWholeResultBound(t *testing.T) {
	r := newListenRig(t, false, nil)
	c := r.connect(t, nil)
	// multi holds "first", a 2 KiB block and "last": the big one is stored
	// per block; the rest fits.
	res := c.call(t, "multi", nil)
	if ts := texts(res); ts[0] != "first" || ts[len(ts)-1] != "last" {
		t.Fatalf("small blocks changed: %s", dump(res))
	}
}

func TestListenServerToClientFlows(t *testing.T) {
	r := newListenRig(t, false, nil)
	var progress sync.WaitGroup
	progress.Add(1)
	var once sync.Once
	c := r.connect(t, &mcp.ClientOptions{
		//lint:ignore SA1019 sampling is deprecated from 2026-07-28 on, and still forwarded for the versions before
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			//lint:ignore SA1019 as above
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "pong"}}, nil
		},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			once.Do(progress.Done)
		},
	})
	if got := texts(c.call(t, "sample", nil)); len(got) != 1 || got[0] != "pong" {
		t.Fatalf("sampling through HTTP: %v", got)
	}
	params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	if _, err := c.cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	progress.Wait()
	// Cancellation: the slow call's context ends upstream.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		done <- err
	}()
	r.mu.Lock()
	up := r.ups[0]
	r.mu.Unlock()
	<-up.slowStarted
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	select {
	case <-up.slowCancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancellation did not reach the upstream")
	}
}

func TestListenSlowUpstreamDoesNotBlockOthers(t *testing.T) {
	r := newListenRig(t, false, nil)
	a, b := r.connect(t, nil), r.connect(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		done <- err
	}()
	r.mu.Lock()
	up := r.ups[0]
	r.mu.Unlock()
	<-up.slowStarted
	// While a waits on its slow upstream, b and a's own other calls go on.
	b.call(t, "small", nil)
	a.call(t, "small", nil)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled slow call succeeded")
	}
}

func TestListenDeleteEndsUpstreamProcess(t *testing.T) {
	r := newListenRig(t, true, nil)
	c := r.connect(t, nil)
	c.call(t, "big", map[string]any{"size": 10})
	r.mu.Lock()
	cmd := r.cmds[0]
	r.mu.Unlock()
	pid := cmd.Process.Pid
	if err := c.cs.Close(); err != nil { // the SDK client sends DELETE
		t.Fatal(err)
	}
	waitFor(t, func() bool { return r.h.Sessions() == 0 })
	if cmd.ProcessState == nil {
		t.Fatal("the upstream process was not waited for")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the upstream process %d is still there: %v", pid, err)
	}
}

func TestListenIdleTimeoutEndsSession(t *testing.T) {
	r := newListenRig(t, true, &HTTPOptions{IdleTimeout: 100 * time.Millisecond})
	c := r.connect(t, nil)
	c.call(t, "big", map[string]any{"size": 10})
	waitFor(t, func() bool { return r.h.Sessions() == 0 })
	r.mu.Lock()
	cmd := r.cmds[0]
	r.mu.Unlock()
	waitFor(t, func() bool { return cmd.ProcessState != nil })
	if _, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{}}); err == nil {
		t.Fatal("a call on an ended session succeeded")
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends one raw POST and returns the response and its body.
func post(t *testing.T, url, session, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestListenBadInput(t *testing.T) {
	before := goleak.IgnoreCurrent()
	r := newListenRig(t, false, &HTTPOptions{MaxRequestBytes: 1024})
	good := r.connect(t, nil)
	cases := []struct {
		name, session, body string
		header              []string
		status              int
		contains            string
	}{
		{"not JSON", "", "{{{", nil, 400, `"code":-32700`},
		{"batch opening a session", "", "[" + initialize + "]", nil, 400, `"code":-32600`},
		{"not initialize", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil, 400, "starts with initialize"},
		{"oversized", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", 2048) + `"}}`, nil, 413, "exceeds 1024 bytes"},
		{"unknown session", "NOSUCHSESSION", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, 404, "no such MCP session"},
		{"rebinding Host", "", initialize, []string{"Host", "evil.example.com"}, 403, "Host"},
		{"foreign Origin", "", initialize, []string{"Origin", "http://evil.example.com"}, 403, "Origin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, r.srv.URL, c.session, c.body, c.header...)
			if resp.StatusCode != c.status || !strings.Contains(body, c.contains) {
				t.Fatalf("got %d %q, want %d containing %q", resp.StatusCode, body, c.status, c.contains)
			}
		})
	}
	// The listener's own origin is fine; the good session still works.
	if resp, _ := post(t, r.srv.URL, "", initialize, "Origin", strings.Replace(r.srv.URL, "127.0.0.1", "localhost", 1)); resp.StatusCode != http.StatusOK {
		t.Fatalf("loopback origin refused: %d", resp.StatusCode)
	}
	good.call(t, "small", nil)
	// Within a session too: a request over the limit is refused before it
	// is read whole, and the session goes on.
	big := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"small","arguments":{"x":"` + strings.Repeat("a", 2048) + `"}}}`
	if resp, body := post(t, r.srv.URL, good.cs.ID(), big, "Mcp-Protocol-Version", "2025-06-18"); resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "exceeds 1024 bytes") {
		t.Fatalf("in-session oversized request: %d %q", resp.StatusCode, body)
	}
	good.call(t, "small", nil)
	r.finish(t, before)
}

func TestListenToken(t *testing.T) {
	r := newListenRig(t, false, &HTTPOptions{Token: "s3cret-token-0123"})
	for _, auth := range []string{"", "Bearer wrong", "s3cret-token-0123", "Bearer s3cret-token-01234"} {
		resp, body := post(t, r.srv.URL, "", initialize, "Authorization", auth)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "s3cret") || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("auth %q: %d %q", auth, resp.StatusCode, body)
		}
	}
	if resp, _ := post(t, r.srv.URL, "", initialize, "Authorization", "Bearer s3cret-token-0123"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the right token was refused: %d", resp.StatusCode)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	hc := &http.Client{Transport: &httpup.RoundTripper{Next: http.DefaultTransport, Header: http.Header{"Authorization": {"Bearer s3cret-token-0123"}}}}
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.srv.URL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "small", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
}

func TestListenClientDisconnectMidStream(t *testing.T) {
	r := newListenRig(t, false, nil)
	c := r.connect(t, nil)
	// Open a session by hand, start a slow call and drop the connection.
	resp, _ := post(t, r.srv.URL, "", initialize)
	id := resp.Header.Get("Mcp-Session-Id")
	post(t, r.srv.URL, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.URL,
		strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	// The other session keeps working, and so does this one.
	c.call(t, "small", nil)
	if resp, body := post(t, r.srv.URL, id, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("ping after a dropped stream: %d %s", resp.StatusCode, body)
	}
	del, _ := http.NewRequest(http.MethodDelete, r.srv.URL, nil)
	del.Header.Set("Mcp-Session-Id", id)
	if resp, err := http.DefaultClient.Do(del); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
}

func TestNewHTTPHandlerErrors(t *testing.T) {
	if _, err := NewHTTPHandler(nil, nil); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("nil SessionFunc: %v", err)
	}
	f := func(context.Context, string, string) (*Proxy, mcp.Transport, error) {
		return nil, nil, errors.New("no")
	}
	for _, o := range []*HTTPOptions{{MaxSessions: -1}, {MaxRequestBytes: -1}} {
		if _, err := NewHTTPHandler(f, o); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	h, err := NewHTTPHandler(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, body := post(t, srv.URL, "", initialize)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "cannot start the upstream") || strings.Contains(body, "no") && strings.Contains(body, `"no"`) {
		t.Fatalf("failing SessionFunc: %d %s", resp.StatusCode, body)
	}
	if h.Sessions() != 0 {
		t.Fatal("a failed session stayed")
	}
	var m map[string]any
	if json.Unmarshal([]byte(body), &m) != nil || m["id"] != 1.0 {
		t.Fatalf("the error does not answer the request: %s", body)
	}
}

func TestIsLoopbackAddress(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:80": true, "[::1]:1": true, "localhost:9": true,
		":8080": false, "0.0.0.0:80": false, "10.0.0.1:80": false, "bad": false} {
		if got := IsLoopbackAddress(addr); got != want {
			t.Errorf("IsLoopbackAddress(%q) = %v", addr, got)
		}
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not reached")
}
