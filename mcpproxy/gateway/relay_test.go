//lint:file-ignore SA1019 MCP logging and sampling are deprecated as of protocol 2026-07-28 but still relayed by the gateway; this test exercises them.

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
)

// titledMulti is an elicitation schema clients accept that the SDK's own
// client validation refuses: the gateway relays it as it is.
const titledMulti = `{"type":"object","properties":{"pick":{"type":"array","items":{"type":"string","anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}}}}`

// relayServer is an upstream whose tool logs, samples and elicits while
// it runs, and whose resource is subscribable.
func relayServer(t *testing.T, version *string, mu *sync.Mutex) (*mcp.Server, func() (mcp.Transport, error)) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "relay", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	srv.AddTool(&mcp.Tool{Name: "converse", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			*version = req.Session.InitializeParams().ProtocolVersion
			mu.Unlock()
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "l", Data: "logged"})
			sampled, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "q"}}}})
			if err != nil {
				return toolError("sampling: " + err.Error()), nil
			}
			var schema any
			_ = json.Unmarshal([]byte(titledMulti), &schema)
			el, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "pick", RequestedSchema: schema})
			if err != nil {
				return toolError("elicitation: " + err.Error()), nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: sampled.Content.(*mcp.TextContent).Text + "/" + el.Action}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "file:///watched", Name: "watched"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///watched", Text: "w"}}}, nil
	})
	return srv, func() (mcp.Transport, error) {
		srvT, cliT := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), srvT, nil); err != nil {
			return nil, err
		}
		return cliT, nil
	}
}

// TestGatewayRelaysToTheCallingHTTPClient serves the gateway over
// Streamable HTTP to a client without a standalone stream: what the
// server sends during a call (a log message, a sampling and an
// elicitation request, with a schema the SDK's client would refuse) comes
// on that call's own stream, the server is spoken to at
// UpstreamProtocolVersion, and a subscription's updates reach the client.
func TestGatewayRelaysToTheCallingHTTPClient(t *testing.T) {
	var mu sync.Mutex
	var version string
	upSrv, connect := relayServer(t, &version, &mu)
	store, err := backend.Open(context.Background(), "mem://", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg, err := Parse([]byte(`{"mcpServers": {"r": {"command": "r"}, "other": {"command": "o"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	other := &goServer{name: "o"}
	gw, err := New(cfg, off, reh, &Options{KeepAlive: -1, Transport: func(s *Server) (mcp.Transport, error) {
		if s.Name == "r" {
			return connect()
		}
		return other.transport()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return gw.Server() }, nil))
	defer hs.Close()

	var logs []string
	updated := make(chan string, 1)
	var elicited json.RawMessage
	cl := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, r.Params.Logger)
			mu.Unlock()
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("unreached")
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	// A client that accepts the schema (the SDK's own client would refuse
	// it before its handler).
	cl.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ElicitRequest); ok {
				mu.Lock()
				elicited, _ = json.Marshal(r.Params.RequestedSchema)
				mu.Unlock()
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return next(ctx, method, req)
		}
	})
	ctx := context.Background()
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: UpstreamProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "r__converse", Arguments: map[string]any{}})
	if err != nil || res.IsError || text(res) != "sampled/decline" {
		t.Fatalf("converse: %v %q", err, text(res))
	}
	mu.Lock()
	if strings.Join(logs, ",") != "r/l" || version != UpstreamProtocolVersion || !strings.Contains(string(elicited), `"anyOf"`) {
		t.Errorf("logs %v, upstream version %q, elicited schema %s", logs, version, elicited)
	}
	mu.Unlock()

	// Updates come outside any call: on the standalone stream of a client
	// that opens one.
	sub, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: UpstreamProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	cs = sub
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///watched"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := upSrv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "file:///watched"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-updated:
		if got != "file:///watched" {
			t.Fatalf("updated %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the update did not reach the subscribed client")
	}
	// The server restarts (after the 1 s backoff): it is subscribed again.
	for ss := range upSrv.Sessions() {
		_ = ss.Close()
	}
	deadline := time.Now().Add(20 * time.Second)
	for n := 0; n == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the server was not subscribed again after its restart")
		}
		time.Sleep(20 * time.Millisecond)
		_ = upSrv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "file:///watched"})
		select {
		case <-updated:
			n++
		default:
		}
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "file:///watched"}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///nowhere"}); err == nil {
		t.Fatal("a subscription to a URI no server lists succeeded")
	}
}

func TestGatewayForwardMeta(t *testing.T) {
	got := forwardMeta(mcp.Meta{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": map[string]any{}, "progressToken": "p", "x": 1})
	if len(got) != 2 || got["x"] != 1 || got["progressToken"] != "p" {
		t.Errorf("forwarded %v", got)
	}
	if got := forwardMeta(mcp.Meta{"io.modelcontextprotocol/logLevel": "debug"}); got != nil {
		t.Errorf("forwarded %v", got)
	}
}
