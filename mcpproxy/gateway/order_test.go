//lint:file-ignore SA1019 MCP logging is deprecated as of protocol 2026-07-28 but still routed by the gateway; this test exercises it.

package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
)

// rawClient speaks Streamable HTTP by hand, so that a test sees each
// message on the stream it came on, in the order it came.
type rawClient struct {
	t       *testing.T
	url     string
	session string
}

// wireMsg is one JSON-RPC message as a client reads it.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// post sends one message and returns the messages of its response, in
// order (an SSE stream or one JSON body).
func (c *rawClient) post(body string) []wireMsg {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", UpstreamProtocolVersion)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("POST: %s %s", resp.Status, b)
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	var out []wireMsg
	add := func(data []byte) {
		var m wireMsg
		if err := json.Unmarshal(data, &m); err != nil {
			c.t.Fatalf("a message that is not JSON: %q", data)
		}
		out = append(out, m)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		if len(bytes.TrimSpace(b)) > 0 {
			add(b)
		}
		return out
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			add(bytes.TrimSpace(data))
		}
	}
	if err := sc.Err(); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// noteServer is an upstream whose tool logs, reports progress and
// returns at once: nothing but the wire's order keeps the notifications
// ahead of the result.
func noteServer() func() (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "note", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "note", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "l", Data: "noted"})
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 1})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	return func() (mcp.Transport, error) {
		srvT, cliT := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), srvT, nil); err != nil {
			return nil, err
		}
		return cliT, nil
	}
}

// TestGatewayNotificationsBeforeResult calls a tool that logs and reports
// progress and then returns at once, many times, through the gateway
// served over Streamable HTTP to a client without a standalone stream:
// every time, the log message and the progress come on the call's own
// stream, in the order the server wrote them, before the call's result.
func TestGatewayNotificationsBeforeResult(t *testing.T) {
	store, err := backend.Open(context.Background(), "mem://", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg, err := Parse([]byte(`{"mcpServers": {"n": {"command": "n"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	connect := noteServer()
	gw, err := New(cfg, off, reh, &Options{KeepAlive: -1, Transport: func(*Server) (mcp.Transport, error) { return connect() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return gw.Server() }, nil))
	defer hs.Close()

	c := &rawClient{t: t, url: hs.URL}
	c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + UpstreamProtocolVersion +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if c.session == "" {
		t.Fatal("no session id")
	}
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.post(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`)
	const calls = 300
	for i := range calls {
		id := 100 + i
		got := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"n__note","arguments":{},"_meta":{"progressToken":"p%d"}}}`, id, i))
		var seq []string
		for _, m := range got {
			switch {
			case m.Method == methodLog:
				var p mcp.LoggingMessageParams
				_ = json.Unmarshal(m.Params, &p)
				seq = append(seq, "log "+p.Logger)
			case m.Method == methodProgress:
				var p mcp.ProgressNotificationParams
				_ = json.Unmarshal(m.Params, &p)
				seq = append(seq, fmt.Sprint("progress ", p.ProgressToken))
			case string(m.ID) == fmt.Sprint(id) && m.Result != nil:
				seq = append(seq, "result")
			default:
				seq = append(seq, "other "+m.Method+string(m.ID))
			}
		}
		want := fmt.Sprintf("log n/l, progress p%d, result", i)
		if s := strings.Join(seq, ", "); s != want {
			t.Fatalf("call %d of %d: the call's stream held %q, want %q", i+1, calls, s, want)
		}
	}
}

func TestGatewayRoutesProgress(t *testing.T) {
	f := newFixture(t, twoServers, &goServer{name: "a"}, &goServer{name: "b"})
	if err := f.client.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "b__ask", Arguments: map[string]any{}}
	p.SetProgressToken("client-token")
	res, err := f.client.CallTool(context.Background(), p)
	if err != nil || text(res) != "asked" {
		t.Fatalf("ask: %v %+v", err, res)
	}
	waitFor(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.progress) == 1 })
	if f.progress[0] != "client-token:half" {
		t.Errorf("progress %v", f.progress)
	}
}
