package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/mcpproxy"
	"github.com/hybridctx/hybridctx/workspace"
)

// chanConn is a connection whose reads come from in and whose writes are
// dropped.
type chanConn struct{ in chan jsonrpc.Message }

func (c chanConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m, ok := <-c.in:
		if !ok {
			return nil, io.EOF
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (chanConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (chanConn) Close() error                                 { return nil }
func (chanConn) SessionID() string                            { return "" }

// TestWireTakesToolResults: the wire takes the result of a tools/call
// written with a takenResult (the SDK gets an empty one), leaves an error
// response and every other response as they are, and forgets a request
// whose caller stopped waiting, so that its late response passes as is.
func TestWireTakesToolResults(t *testing.T) {
	ctx := context.Background()
	conn := chanConn{in: make(chan jsonrpc.Message, 4)}
	w := &wire{Connection: conn}
	id := func(n float64) jsonrpc.ID { i, _ := jsonrpc.MakeID(n); return i }
	call := func(n float64, method string, tr *takenResult) {
		c := ctx
		if tr != nil {
			c = withTaken(ctx, tr)
		}
		if err := w.Write(c, &jsonrpc.Request{ID: id(n), Method: method, Params: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(r *jsonrpc.Response) *jsonrpc.Response {
		conn.in <- r
		m, err := w.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m.(*jsonrpc.Response)
	}
	body := json.RawMessage(`{"content":[{"type":"text","text":"big"}]}`)

	answered, failed, forgotten := &takenResult{}, &takenResult{}, &takenResult{}
	call(1, "tools/call", answered)
	call(2, "tools/call", failed)
	call(3, "tools/call", forgotten)
	call(4, "tools/list", nil)
	if got := read(&jsonrpc.Response{ID: id(1), Result: body}); string(got.Result) != string(emptyResult) {
		t.Errorf("the SDK got %s, want the empty result", got.Result)
	}
	if raw := answered.result(); string(raw) != string(body) {
		t.Errorf("taken %s, want %s", raw, body)
	}
	if got := read(&jsonrpc.Response{ID: id(2), Error: &jsonrpc.Error{Code: -32603, Message: "no"}}); got.Error == nil || failed.result() != nil {
		t.Errorf("an error response was taken: %+v", got)
	}
	if forgotten.result() != nil {
		t.Error("a result was taken before its response")
	}
	if got := read(&jsonrpc.Response{ID: id(3), Result: body}); string(got.Result) != string(body) {
		t.Errorf("the late response of a forgotten call was changed: %s", got.Result)
	}
	if got := read(&jsonrpc.Response{ID: id(4), Result: body}); string(got.Result) != string(body) {
		t.Errorf("a tools/list response was changed: %s", got.Result)
	}
	if len(w.taken) != 0 {
		t.Errorf("%d requests still remembered", len(w.taken))
	}
}

// scriptedServer is an upstream spoken to message by message: it lists one
// tool, "t", and answers each call to it with result, as it is ("": a
// response with neither a result nor an error).
func scriptedServer(result string) func() (mcp.Transport, error) {
	return func() (mcp.Transport, error) {
		srvT, cliT := mcp.NewInMemoryTransports()
		conn, err := srvT.Connect(context.Background())
		if err != nil {
			return nil, err
		}
		go func() {
			ctx := context.Background()
			for {
				m, err := conn.Read(ctx)
				if err != nil {
					return
				}
				r, ok := m.(*jsonrpc.Request)
				if !ok || !r.IsCall() {
					continue
				}
				res := `{}`
				switch r.Method {
				case "initialize":
					res = `{"protocolVersion":"` + UpstreamProtocolVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}`
				case "tools/list":
					res = `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`
				case "tools/call":
					res = result
				}
				resp := &jsonrpc.Response{ID: r.ID}
				if res != "" {
					resp.Result = json.RawMessage(res)
				}
				if conn.Write(ctx, resp) != nil {
					return
				}
			}
		}()
		return cliT, nil
	}
}

// TestGatewayMalformedToolResult: a server whose tools/call result is not
// one (content that is not a list, or no result at all) gets its call answered with a
// categorical tool error naming the server; a well-formed result of the
// same server passes.
func TestGatewayMalformedToolResult(t *testing.T) {
	for _, tc := range []struct{ result, want string }{
		{`{"content":5}`, `the MCP server "s" answered a malformed tools/call result`},
		{``, `the MCP server "s" answered a malformed tools/call result`},
		{`{"content":[{"type":"text","text":"fine"}]}`, "fine"},
	} {
		f := newScriptedFixture(t, scriptedServer(tc.result))
		res, err := f.CallTool(context.Background(), &mcp.CallToolParams{Name: "s__t", Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", tc.result, err)
		}
		if !strings.Contains(text(res), tc.want) || res.IsError != (tc.want != "fine") {
			t.Errorf("%s: answered %q (error %v), want %q", tc.result, text(res), res.IsError, tc.want)
		}
	}
}

// newScriptedFixture serves a gateway over one server, "s", and returns
// its client.
func newScriptedFixture(t *testing.T, connect func() (mcp.Transport, error)) *mcp.ClientSession {
	t.Helper()
	store, err := backend.Open(context.Background(), "mem://", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	f := newFixtureWith(t, store, artifact.Owner{User: "u", Workflow: "gateway", Session: "s"}, `{"mcpServers": {"s": {"command": "s"}}}`,
		func(*Server) (mcp.Transport, error) { return connect() })
	return f.client
}

// newFixtureWith serves a gateway whose servers connect through transport.
func newFixtureWith(t *testing.T, store *workspace.Store, owner artifact.Owner, config string, transport func(*Server) (mcp.Transport, error)) *fixture {
	t.Helper()
	f := &fixture{servers: map[string]*goServer{}, clock: &fakeClock{ch: make(chan time.Time)}, store: store, events: &recorder{},
		changed: make(chan struct{}, 100)}
	return f.start(t, store, owner, config, transport)
}

// lineServer is a server "s" over real line framing (mcpproxy.Stream, as a
// command's standard output is read) that answers each tools/call with the
// raw line call returns for the request's id.
func lineServer(call func(id string) string) func() (mcp.Transport, error) {
	return func() (mcp.Transport, error) {
		toServer, fromGateway := io.Pipe()
		toGateway, fromServer := io.Pipe()
		go func() {
			sc := bufio.NewScanner(toServer)
			for sc.Scan() {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
					continue
				}
				res := `{}`
				switch m.Method {
				case "initialize":
					res = `{"protocolVersion":"` + UpstreamProtocolVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"lines","version":"1"}}`
				case "tools/list":
					res = `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`
				case "tools/call":
					if _, err := io.WriteString(fromServer, call(string(m.ID))+"\n"); err != nil {
						return
					}
					continue
				}
				if _, err := io.WriteString(fromServer, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+res+"}\n"); err != nil {
					return
				}
			}
		}()
		return &mcpproxy.Stream{Reader: toGateway, Writer: fromGateway}, nil
	}
}

// TestGatewayMalformedResponseLine: a tools/call response line that is not
// a message (not JSON, neither a result nor an error) but shows its id is
// answered at once with the categorical tool error, not left waiting; a
// line with no id is dropped and the response after it passes.
func TestGatewayMalformedResponseLine(t *testing.T) {
	const malformed = `the MCP server "s" answered a malformed tools/call result`
	fine := `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"fine"}]}}`
	for _, tc := range []struct {
		name, want string
		line       func(id string) string
	}{
		{"not JSON", malformed, func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[}}` }},
		{"no result", malformed, func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `}` }},
		{"no id, then the answer", "fine", func(id string) string { return "banner\n" + fmt.Sprintf(fine, id) }},
	} {
		cs := newScriptedFixture(t, lineServer(tc.line))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__t", Arguments: map[string]any{}})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v (the call waited)", tc.name, err)
		}
		if !strings.Contains(text(res), tc.want) || res.IsError != (tc.want != "fine") {
			t.Errorf("%s: answered %q (error %v), want %q", tc.name, text(res), res.IsError, tc.want)
		}
	}
}
