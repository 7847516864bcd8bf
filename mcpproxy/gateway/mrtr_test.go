//lint:file-ignore SA1019 sampling is deprecated as of protocol 2026-07-28 but still asked by servers of the versions before; these tests route it.

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
)

// askingServer is an upstream on UpstreamProtocolVersion whose tool
// "interview" elicits, then samples with what it was told, and whose tool
// "hold" elicits and reports when its call ends.
type askingServer struct {
	calls atomic.Int32 // tool calls the server received
	// prompts/get and resources/read requests whose _meta carried the
	// client's own key "mine", and the protocol's keys (never forwarded)
	mine, reserved atomic.Int32
	ended          chan string // the hold tool's end: its elicitation's error
}

func (a *askingServer) sawMeta(m mcp.Meta) {
	if m["mine"] != nil {
		a.mine.Add(1)
	}
	for k := range m {
		if strings.HasPrefix(k, reservedMeta) {
			a.reserved.Add(1)
			return
		}
	}
}

func (a *askingServer) transport() (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "interview", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a.calls.Add(1)
			el, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: json.RawMessage(
				`{"type":"object","properties":{"name":{"type":"string"}}}`)})
			if err != nil {
				return toolError("elicitation: " + err.Error()), nil
			}
			name, _ := el.Content["name"].(string)
			sampled, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "greet " + name}}}})
			if err != nil {
				return toolError("sampling: " + err.Error()), nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: el.Action + ":" + name + "/" + sampled.Content.(*mcp.TextContent).Text}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "hold", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a.calls.Add(1)
			el, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "wait"})
			msg := "answered"
			if err != nil {
				msg = err.Error()
			} else if el.Action == "accept" { // then runs until cancelled
				<-ctx.Done()
				msg = "cancelled after the answer"
			}
			a.ended <- msg
			return toolError(msg), nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greeting"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a.calls.Add(1)
		a.sawMeta(req.Params.Meta)
		el, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "whom?"})
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "greet " + el.Action}}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "file:///sampled", Name: "sampled"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		a.calls.Add(1)
		a.sawMeta(req.Params.Meta)
		sampled, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "greet bob"}}}})
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///sampled", Text: sampled.Content.(*mcp.TextContent).Text}}}, nil
	})
	srvT, cliT := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), srvT, nil); err != nil {
		return nil, err
	}
	return cliT, nil
}

// TestGatewayMultiRoundTripPromptAndResource: prompts/get and
// resources/read are served the same way; a requestState of one method
// is refused by another.
func TestGatewayMultiRoundTripPromptAndResource(t *testing.T) {
	gw, up := askingGateway(t, 0)
	ctx := context.Background()
	for _, version := range []string{MultiRoundTripVersion, UpstreamProtocolVersion} {
		c := &askingClient{}
		cs, _ := connectIn(t, gw, c.options(false), version)
		meta := mcp.Meta{"mine": 1, reservedMeta + "clientInfo": map[string]any{"name": "x"}}
		pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "s__greeting", Meta: meta})
		if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "greet accept" {
			t.Fatalf("%s: prompt: %v %+v", version, err, pr)
		}
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///sampled", Meta: meta})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello bob" {
			t.Fatalf("%s: resource: %v %+v", version, err, rr)
		}
		if c.elicited.Load() != 1 || c.sampled.Load() != 1 {
			t.Errorf("%s: elicited %d, sampled %d", version, c.elicited.Load(), c.sampled.Load())
		}
		_ = cs.Close()
	}
	// The client's own _meta goes upstream, the protocol's keys do not (they
	// describe the client's session with the gateway).
	if up.mine.Load() != 4 || up.reserved.Load() != 0 {
		t.Errorf("upstream saw the client's key %d times (want 4), the protocol's %d (want 0)", up.mine.Load(), up.reserved.Load())
	}
	cs, _ := connectIn(t, gw, (&askingClient{}).options(true), MultiRoundTripVersion)
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "s__greeting"})
	if err != nil || !pr.NeedsInput() || pr.RequestState == "" {
		t.Fatalf("prompt round 1: %v %+v", err, pr)
	}
	before := up.calls.Load()
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///sampled", RequestState: pr.RequestState})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Message != InputStateRefusal {
		t.Errorf("a prompt's state for a read: %v", err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: interview, Arguments: map[string]any{}, RequestState: pr.RequestState})
	if !errors.As(err, &we) || we.Message != InputStateRefusal {
		t.Errorf("a prompt's state for a tool: %v", err)
	}
	if up.calls.Load() != before {
		t.Error("the server was called")
	}
}

// end returns how the next hold call ended, failing the test when none
// ends in 10 s.
func (a *askingServer) end(t *testing.T) string {
	t.Helper()
	select {
	case got := <-a.ended:
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("a held call did not end")
		return ""
	}
}

func askingGateway(t *testing.T, timeout time.Duration) (*Gateway, *askingServer) {
	t.Helper()
	store, err := backend.Open(context.Background(), "mem://", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	cfg, err := Parse([]byte(`{"mcpServers": {"s": {"command": "s"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	up := &askingServer{ended: make(chan string, 16)}
	gw, err := New(cfg, off, reh, &Options{KeepAlive: -1, InputTimeout: timeout,
		Transport: func(*Server) (mcp.Transport, error) { return up.transport() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	return gw, up
}

// askingClient is a client that answers elicitation with name "ada" and
// sampling with "hello <what it was asked>", counting each.
type askingClient struct {
	elicited, sampled atomic.Int32
}

func (c *askingClient) options(manual bool) *mcp.ClientOptions {
	o := &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.elicited.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			c.sampled.Add(1)
			asked := r.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hello " + strings.TrimPrefix(asked, "greet ")}}, nil
		},
	}
	if manual {
		o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	return o
}

// connectIn connects a client at version to the gateway over in-memory
// transports; the returned function waits for the gateway's side to end.
func connectIn(t *testing.T, gw *Gateway, opts *mcp.ClientOptions, version string) (*mcp.ClientSession, func()) {
	t.Helper()
	srvT, cliT := mcp.NewInMemoryTransports()
	ran := make(chan struct{})
	go func() { _ = gw.Run(context.Background(), srvT); close(ran) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, opts).Connect(context.Background(), cliT,
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, func() { <-ran }
}

const interview = "s__interview"

// TestGatewayMultiRoundTripSamplingAndElicitation: a client on 2026-07-28
// (the SDK's client retries by itself) gets the server's elicitation and
// sampling as input requests, in two rounds, and the server's result; a
// client before it gets them as requests, as before.
func TestGatewayMultiRoundTripSamplingAndElicitation(t *testing.T) {
	gw, up := askingGateway(t, 0)
	for _, version := range []string{MultiRoundTripVersion, UpstreamProtocolVersion} {
		c := &askingClient{}
		cs, _ := connectIn(t, gw, c.options(false), version)
		if got := cs.InitializeResult().ProtocolVersion; got != version {
			t.Fatalf("negotiated %q, want %q", got, version)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: interview, Arguments: map[string]any{}})
		if err != nil || res.IsError || text(res) != "accept:ada/hello ada" {
			t.Fatalf("%s: %v %q", version, err, textOf(res))
		}
		if c.elicited.Load() != 1 || c.sampled.Load() != 1 {
			t.Errorf("%s: elicited %d, sampled %d", version, c.elicited.Load(), c.sampled.Load())
		}
		if n := gw.inputs.pending(cs2ss(t, gw)); n != 0 {
			t.Errorf("%s: %d calls still wait for input", version, n)
		}
		_ = cs.Close()
	}
	if up.calls.Load() != 2 {
		t.Errorf("the server got %d calls, want 2 (one each)", up.calls.Load())
	}
}

func textOf(r *mcp.CallToolResult) string {
	if r == nil {
		return "<nil>"
	}
	return text(r)
}

// cs2ss returns the gateway's one client session (nil when none).
func cs2ss(t *testing.T, gw *Gateway) *mcp.ServerSession {
	t.Helper()
	var last *mcp.ServerSession
	for ss := range gw.Server().Sessions() {
		last = ss
	}
	return last
}

// TestGatewayMultiRoundTripManual drives the rounds by hand: each
// input-required result carries one request and a fresh requestState; a
// requestState used once, made up, or another session's is refused with
// invalid params and calls nothing upstream; the server's pending request
// gets the client's response.
func TestGatewayMultiRoundTripManual(t *testing.T) {
	gw, up := askingGateway(t, 0)
	ctx := context.Background()
	cs, _ := connectIn(t, gw, (&askingClient{}).options(true), MultiRoundTripVersion)
	other, _ := connectIn(t, gw, (&askingClient{}).options(true), MultiRoundTripVersion)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: interview, Arguments: map[string]any{}})
	if err != nil || !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" || len(res.Content) != 0 {
		t.Fatalf("round 1: %v %+v", err, res)
	}
	var id string
	for k, r := range res.InputRequests {
		if p, ok := r.(*mcp.ElicitParams); !ok || p.Message != "your name?" {
			t.Fatalf("round 1 asks %T %+v", r, r)
		}
		id = k
	}
	first := res.RequestState
	refused := func(name, state string, s *mcp.ClientSession) {
		t.Helper()
		before := up.calls.Load()
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}, RequestState: state,
			InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "eve"}}}})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || we.Message != InputStateRefusal {
			t.Errorf("state %q: %v, want the refusal", state, err)
		}
		if up.calls.Load() != before {
			t.Errorf("state %q: the server was called", state)
		}
	}
	refused(interview, "forged", cs)
	refused(interview, first, other) // another session's
	refused("s__hold", first, cs)    // another tool's
	// The refusals changed nothing: the state still answers its session.
	// A request left unanswered is asked again, under a fresh state.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: interview, Arguments: map[string]any{}, RequestState: first})
	if err != nil || !res.NeedsInput() || res.RequestState == first || res.InputRequests[id] == nil {
		t.Fatalf("unanswered: %v %+v", err, res)
	}
	refused(interview, first, cs) // used once
	first = res.RequestState
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: interview, Arguments: map[string]any{}, RequestState: first,
		InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}}})
	if err != nil || !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" || res.RequestState == first {
		t.Fatalf("round 2: %v %+v", err, res)
	}
	second := res.RequestState
	var sampling *mcp.CreateMessageWithToolsParams // the form a client decodes
	for k, r := range res.InputRequests {
		sampling, _ = r.(*mcp.CreateMessageWithToolsParams)
		id = k
	}
	if sampling == nil || len(sampling.Messages) != 1 || sampling.Messages[0].Content[0].(*mcp.TextContent).Text != "greet ada" {
		t.Fatalf("round 2 asks %+v", res.InputRequests)
	}
	refused(interview, first, cs)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: interview, Arguments: map[string]any{}, RequestState: second,
		InputResponses: mcp.InputResponseMap{id: &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hi ada"}}}})
	if err != nil || res.NeedsInput() || text(res) != "accept:ada/hi ada" {
		t.Fatalf("round 3: %v %q", err, textOf(res))
	}
	refused(interview, second, cs) // the call is over
	if up.calls.Load() != 1 {
		t.Errorf("the server got %d calls, want 1", up.calls.Load())
	}
}

// TestGatewayMultiRoundTripWrongResponse: a response of another kind than
// the request fails the server's request, not the gateway.
func TestGatewayMultiRoundTripWrongResponse(t *testing.T) {
	gw, _ := askingGateway(t, 0)
	ctx := context.Background()
	cs, _ := connectIn(t, gw, (&askingClient{}).options(true), MultiRoundTripVersion)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: interview, Arguments: map[string]any{}})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("round 1: %v", err)
	}
	in := mcp.InputResponseMap{}
	for k := range res.InputRequests {
		in[k] = &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "x"}}
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: interview, Arguments: map[string]any{}, RequestState: res.RequestState, InputResponses: in})
	if err != nil || !res.IsError || !strings.Contains(text(res), "elicitation:") {
		t.Fatalf("round 2: %v %q", err, textOf(res))
	}
}

// TestGatewayMultiRoundTripExpiresAndEnds: a call the client does not come
// back to ends at the timeout (the server's request is cancelled, the
// state refused); a session that closes ends its waiting calls; the
// bound refuses the server's request once a session holds
// MaxPendingInputs; no goroutine is left.
func TestGatewayMultiRoundTripExpiresAndEnds(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		gw, up := askingGateway(t, 200*time.Millisecond)
		ctx := context.Background()
		cs, _ := connectIn(t, gw, (&askingClient{}).options(true), MultiRoundTripVersion)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__hold", Arguments: map[string]any{}})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("hold: %v", err)
		}
		if got := up.end(t); got == "answered" {
			t.Fatalf("the server's request ended %q", got)
		}
		ss := cs2ss(t, gw)
		waitFor(t, func() bool { return gw.inputs.pending(ss) == 0 })
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__hold", Arguments: map[string]any{}, RequestState: res.RequestState}); err == nil {
			t.Fatal("an expired state was resumed")
		}
		_ = cs.Close()
		_ = gw.Close()

		gw, up = askingGateway(t, time.Hour)
		cs, wait := connectIn(t, gw, (&askingClient{}).options(true), MultiRoundTripVersion)
		ss = cs2ss(t, gw)
		for i := range MaxPendingInputs {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__hold", Arguments: map[string]any{}})
			if err != nil || !res.NeedsInput() {
				t.Fatalf("hold %d: %v", i, err)
			}
		}
		if n := gw.inputs.pending(ss); n != MaxPendingInputs {
			t.Fatalf("%d waiting", n)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__hold", Arguments: map[string]any{}})
		if err != nil || res.NeedsInput() || !strings.Contains(text(res), "too many calls waiting") {
			t.Fatalf("over the bound: %v %q", err, textOf(res))
		}
		up.end(t)
		_ = cs.Close()
		wait()
		for range MaxPendingInputs {
			if got := up.end(t); got == "answered" {
				t.Fatalf("the server's request ended %q", got)
			}
		}
		waitFor(t, func() bool { return gw.inputs.pending(ss) == 0 })
		_ = gw.Close()

		// The client cancels the call that hands over its answer: the
		// server's call is cancelled.
		gw, up = askingGateway(t, time.Hour)
		cs, _ = connectIn(t, gw, (&askingClient{}).options(true), MultiRoundTripVersion)
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__hold", Arguments: map[string]any{}})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("hold: %v", err)
		}
		answers := mcp.InputResponseMap{}
		for k := range res.InputRequests {
			answers[k] = &mcp.ElicitResult{Action: "accept"}
		}
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			for gw.inputs.pending(cs2ss(t, gw)) != 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		if _, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "s__hold", Arguments: map[string]any{}, RequestState: res.RequestState,
			InputResponses: answers}); err == nil {
			t.Fatal("a cancelled call answered")
		}
		if got := up.end(t); got != "cancelled after the answer" {
			t.Fatalf("the server's call ended %q", got)
		}
		_ = cs.Close()
		_ = gw.Close()

		// The gateway closes while a call waits for input: it ends.
		gw, _ = askingGateway(t, time.Hour)
		cs, _ = connectIn(t, gw, (&askingClient{}).options(true), MultiRoundTripVersion)
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__hold", Arguments: map[string]any{}}); err != nil || !res.NeedsInput() {
			t.Fatalf("hold: %v", err)
		}
		closed := make(chan struct{})
		go func() { _ = gw.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("the gateway did not close while a call waited for input")
		}
		_ = cs.Close()
	}()
	// Every goroutine of the calls, their sessions and the watchers ends.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGatewayMultiRoundTripOverHTTP: over Streamable HTTP (the gateway's
// --listen handler) a client offering 2026-07-28 is served as well: the
// handler keeps sessions, so it negotiates the version before, and its
// sampling and elicitation come as requests on the call's stream.
func TestGatewayMultiRoundTripOverHTTP(t *testing.T) {
	gw, _ := askingGateway(t, 0)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return gw.Server() }, nil))
	defer hs.Close()
	c := &askingClient{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, c.options(false)).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: hs.URL, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: MultiRoundTripVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: interview, Arguments: map[string]any{}})
	if got := cs.InitializeResult().ProtocolVersion; got != UpstreamProtocolVersion {
		t.Errorf("negotiated %q over Streamable HTTP", got)
	}
	if err != nil || text(res) != "accept:ada/hello ada" || c.elicited.Load() != 1 || c.sampled.Load() != 1 {
		t.Fatalf("%s: %v %q", cs.InitializeResult().ProtocolVersion, err, textOf(res))
	}
}
