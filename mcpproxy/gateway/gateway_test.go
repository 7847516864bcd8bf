//lint:file-ignore SA1019 MCP logging and sampling are deprecated as of protocol 2026-07-28 but still routed by the gateway; these tests exercise them.

package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/workspace"
)

const testThreshold = 1024

// goServer is an in-process upstream: a big-result tool, a write tool
// that records what it got, and a prompt. Each Connect starts a new
// session of it; kill ends the current one (a crash).
type goServer struct {
	name    string
	mu      sync.Mutex
	got     []string // contents the write tool received
	calls   int
	ss      *mcp.ServerSession
	refuse  bool // fail every start
	started int
	many    int    // extra tools t0…tN-1
	also    string // one more tool under this name, when set
	// waiting, when set, adds a tool "wait" that says it began on
	// waiting, then blocks until its call is cancelled and says so on
	// cancelled.
	waiting, cancelled chan struct{}
}

func (s *goServer) transport() (mcp.Transport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started++
	srvT, cliT := mcp.NewInMemoryTransports()
	if s.refuse {
		_ = srvT // never connected: the client's initialize fails or times out
		return cliT, nil
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: s.name, Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "big", Description: "returns n bytes", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ N int }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.N)}}}, nil
		})
	if s.also != "" {
		srv.AddTool(&mcp.Tool{Name: s.also, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "upstream"}}}, nil
			})
	}
	srv.AddTool(&mcp.Tool{Name: "write", InputSchema: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Content string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			s.mu.Lock()
			s.got = append(s.got, in.Content)
			s.calls++
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "writeb64", InputSchema: json.RawMessage(`{"type":"object","properties":{"data":{"type":"string","contentEncoding":"base64"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Data string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			s.mu.Lock()
			s.got = append(s.got, in.Data)
			s.calls++
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
			}
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "l", Data: "logged"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "asked"}}}, nil
		})
	if s.waiting != nil {
		srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				s.waiting <- struct{}{}
				<-ctx.Done()
				s.cancelled <- struct{}{}
				return nil, ctx.Err()
			})
	}
	for i := range s.many {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%d", i), InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	srv.AddResource(&mcp.Resource{URI: "file:///shared", Name: "shared"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///shared", Text: "from " + s.name}}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi from " + s.name}}}}, nil
	})
	ss, err := srv.Connect(context.Background(), srvT, nil)
	if err != nil {
		return nil, err
	}
	s.ss = ss
	return cliT, nil
}

func (s *goServer) kill() {
	s.mu.Lock()
	ss := s.ss
	s.mu.Unlock()
	_ = ss.Close()
}

// fakeClock releases backoff waits when the test says so.
type fakeClock struct {
	mu    sync.Mutex
	waits []time.Duration
	ch    chan time.Time
}

func (c *fakeClock) after(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	return c.ch
}

type fixture struct {
	gw      *Gateway
	client  *mcp.ClientSession
	servers map[string]*goServer
	clock   *fakeClock
	store   *workspace.Store
	events  *recorder
	changed chan struct{}
	// keepAlive is Options.KeepAlive; 0 turns the pings off.
	keepAlive time.Duration

	mu       sync.Mutex
	progress []string
	logs     []string
}

type recorder struct {
	mu  sync.Mutex
	all []*hybridctx.Event
}

func (r *recorder) Emit(_ context.Context, e *hybridctx.Event) error {
	r.mu.Lock()
	r.all = append(r.all, e)
	r.mu.Unlock()
	return nil
}

func (r *recorder) reporter() hybridctx.Reporter {
	return hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "run", AgentID: "gw", Sinks: []hybridctx.Sink{r}})
}

func newFixture(t *testing.T, config string, servers ...*goServer) *fixture {
	t.Helper()
	store, err := backend.Open(context.Background(), "mem://", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return newFixtureOn(t, store, artifact.Owner{User: "u", Workflow: "gateway", Session: "s"}, config, servers...)
}

func newFixtureOn(t *testing.T, store *workspace.Store, owner artifact.Owner, config string, servers ...*goServer) *fixture {
	t.Helper()
	f := &fixture{servers: map[string]*goServer{}, clock: &fakeClock{ch: make(chan time.Time)}, store: store, events: &recorder{},
		changed: make(chan struct{}, 100)}
	for _, s := range servers {
		f.servers[s.name] = s
	}
	return f.start(t, store, owner, config, func(s *Server) (mcp.Transport, error) { return f.servers[s.Name].transport() })
}

func (f *fixture) start(t *testing.T, store *workspace.Store, owner artifact.Owner, config string, transport func(*Server) (mcp.Transport, error)) *fixture {
	t.Helper()
	cfg, err := Parse([]byte(config), nil)
	if err != nil {
		t.Fatal(err)
	}
	bind, _ := hybridctx.NewBinding(owner, store)
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	gw, err := New(cfg, off, reh, &Options{Reporter: f.events.reporter(), After: f.clock.after, KeepAlive: cmp.Or(f.keepAlive, -1), ReadyWait: readyWait,
		Transport: transport})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	f.gw = gw
	srvT, cliT := mcp.NewInMemoryTransports()
	go func() { _ = gw.Run(context.Background(), srvT) }()
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { f.changed <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			f.mu.Lock()
			f.progress = append(f.progress, fmt.Sprint(r.Params.ProgressToken, ":", r.Params.Message))
			f.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			f.mu.Lock()
			f.logs = append(f.logs, r.Params.Logger)
			f.mu.Unlock()
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		}})
	f.client, err = cl.Connect(context.Background(), cliT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.client.Close() })
	return f
}

func (f *fixture) toolNames(t *testing.T) []string {
	t.Helper()
	res, err := f.client.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range res.Tools {
		out = append(out, x.Name)
	}
	return out
}

func (f *fixture) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := f.client.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

var refRE = regexp.MustCompile(`artifact://sha256/[0-9a-f]{64}`)

// readyWait is the fixtures' Options.ReadyWait (0: the default).
var readyWait time.Duration

const twoServers = `{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b", "hybridctx": {"dereference": ["write"]}}}}`

func TestGatewayOneReadToolSetAndNamespacedTools(t *testing.T) {
	f := newFixture(t, twoServers, &goServer{name: "a"}, &goServer{name: "b"})
	names := strings.Join(f.toolNames(t), ",")
	for _, want := range []string{"a__big", "a__write", "b__big", "b__write"} {
		if !strings.Contains(names, want) {
			t.Errorf("tools %s lack %s", names, want)
		}
	}
	if strings.Count(names, "read_artifact") != 1 || strings.Count(names, "search_artifact") != 1 || strings.Count(names, "query_artifact") != 1 {
		t.Errorf("read tools not exactly once: %s", names)
	}
	res, _ := f.client.ListTools(context.Background(), nil)
	for _, x := range res.Tools {
		if x.Name == "b__write" && !strings.Contains(x.Description, DereferenceSentence) {
			t.Errorf("b__write's description lacks the reference sentence: %q", x.Description)
		}
		if x.Name == "a__write" && strings.Contains(x.Description, DereferenceSentence) {
			t.Errorf("a__write says it takes references")
		}
		if strings.HasPrefix(x.Name, "a__") && !strings.Contains(x.Description, `"a"`) {
			t.Errorf("%s does not say its server: %q", x.Name, x.Description)
		}
	}
	p, err := f.client.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "b__greet"})
	if err != nil || !strings.Contains(p.Messages[0].Content.(*mcp.TextContent).Text, "from b") {
		t.Fatalf("prompt: %v %+v", err, p)
	}
}

func TestGatewayBoundsAndPassesByReference(t *testing.T) {
	a, b := &goServer{name: "a"}, &goServer{name: "b"}
	f := newFixture(t, twoServers, a, b)
	big := f.call(t, "a__big", map[string]any{"n": 200000})
	notice := text(big)
	if len(notice) > 4*testThreshold+1024 || strings.Contains(notice, strings.Repeat("x", 2000)) {
		t.Fatalf("result not bounded: %d bytes", len(notice))
	}
	ref := refRE.FindString(notice)
	if ref == "" {
		t.Fatalf("no reference in %q", notice)
	}
	// One decision, one event: the result's one block.
	var offloads []string
	for _, e := range f.events.all {
		if d := e.Diagnostics; d.Operation() == hybridctx.OpOffload {
			offloads = append(offloads, d.Outcome().String())
		}
	}
	if strings.Join(offloads, ",") != "offloaded" {
		t.Errorf("offload events = %v", offloads)
	}
	// A tool that dereferences gets the body.
	if r := f.call(t, "b__write", map[string]any{"content": ref}); r.IsError {
		t.Fatalf("write refused: %s", text(r))
	}
	if len(b.got) != 1 || b.got[0] != strings.Repeat("x", 200000) {
		t.Fatalf("upstream got %d bytes", len(b.got[0]))
	}
	var reasons []string
	for _, e := range f.events.all {
		if d := e.Diagnostics; d.Operation() == hybridctx.OpRehydration {
			reasons = append(reasons, d.Outcome().String()+"/"+d.Reason().String())
		}
	}
	if strings.Join(reasons, ",") != "resolved/tool_argument" {
		t.Errorf("rehydration events = %v, want one resolved/tool_argument", reasons)
	}
	// Never a reference inside a longer string; never for a tool without
	// dereference.
	f.call(t, "b__write", map[string]any{"content": "see " + ref})
	f.call(t, "a__write", map[string]any{"content": ref})
	if b.got[1] != "see "+ref || a.got[0] != ref {
		t.Errorf("references replaced where they must not be: %q %q", b.got[1], a.got[0])
	}
	// A reference that is not this owner's: unauthorized, upstream not called.
	other := "artifact://sha256/" + strings.Repeat("ab", 32)
	r := f.call(t, "b__write", map[string]any{"content": other})
	if !r.IsError || !strings.Contains(text(r), "unauthorized") || b.calls != 2 {
		t.Fatalf("foreign reference: isError=%v %q, calls=%d", r.IsError, text(r), b.calls)
	}
}

func TestGatewayOtherOwnersReferenceRefused(t *testing.T) {
	store, err := backend.Open(context.Background(), "mem://", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mine := newFixtureOn(t, store, artifact.Owner{User: "u", Workflow: "gateway", Session: "one"}, twoServers, &goServer{name: "a"}, &goServer{name: "b"})
	ref := refRE.FindString(text(mine.call(t, "a__big", map[string]any{"n": 50000})))
	b := &goServer{name: "b"}
	theirs := newFixtureOn(t, store, artifact.Owner{User: "u", Workflow: "gateway", Session: "two"}, twoServers, &goServer{name: "a"}, b)
	r := theirs.call(t, "b__write", map[string]any{"content": ref})
	if !r.IsError || !strings.Contains(text(r), "unauthorized") || b.calls != 0 {
		t.Fatalf("another owner's reference: isError=%v %q, upstream calls=%d", r.IsError, text(r), b.calls)
	}
}

func TestGatewayIsolatesAndRestarts(t *testing.T) {
	a, b := &goServer{name: "a"}, &goServer{name: "b"}
	f := newFixture(t, twoServers, a, b)
	time.Sleep(200 * time.Millisecond) // the first lists' notifications
	for len(f.changed) > 0 {
		<-f.changed
	}
	a.kill()
	waitFor(t, func() bool { return !strings.Contains(strings.Join(f.toolNames(t), ","), "a__big") })
	select {
	case <-f.changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no tools/list_changed when a server went down")
	}
	// b keeps serving; a call to a answers a categorical error at once.
	if r := f.call(t, "b__big", map[string]any{"n": 3}); r.IsError || text(r) != "xxx" {
		t.Fatalf("b: %+v", r)
	}
	if r := f.call(t, "a__big", map[string]any{"n": 3}); !r.IsError || !strings.Contains(text(r), "not running") {
		t.Fatalf("a while down: %q", text(r))
	}
	// The restart waits the backoff (1 s first), then a's tools return.
	waitFor(t, func() bool { f.clock.mu.Lock(); defer f.clock.mu.Unlock(); return len(f.clock.waits) == 1 })
	if f.clock.waits[0] != FirstBackoff {
		t.Errorf("first backoff %v", f.clock.waits[0])
	}
	f.clock.ch <- time.Time{}
	waitFor(t, func() bool { return strings.Contains(strings.Join(f.toolNames(t), ","), "a__big") })
	if r := f.call(t, "a__big", map[string]any{"n": 2}); text(r) != "xx" {
		t.Fatalf("a after restart: %q", text(r))
	}
}

func TestGatewayServerThatNeverStarts(t *testing.T) {
	bad := &goServer{name: "a", refuse: true}
	cfg := `{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}, "hybridctx": {"startTimeout": "1s"}}`
	f := newFixture(t, cfg, bad, &goServer{name: "b"})
	names := strings.Join(f.toolNames(t), ",")
	if strings.Contains(names, "a__") || !strings.Contains(names, "b__big") {
		t.Fatalf("tools = %s", names)
	}
	// Backoff doubles: 1 s, 2 s, 4 s …
	for i := 0; i < 3; i++ {
		waitFor(t, func() bool { f.clock.mu.Lock(); defer f.clock.mu.Unlock(); return len(f.clock.waits) == i+1 })
		f.clock.ch <- time.Time{}
	}
	f.clock.mu.Lock()
	defer f.clock.mu.Unlock()
	if f.clock.waits[0] != time.Second || f.clock.waits[1] != 2*time.Second || f.clock.waits[2] != 4*time.Second {
		t.Errorf("backoff = %v", f.clock.waits)
	}
}

func TestGatewayRefusesCollidingUnprefixedNames(t *testing.T) {
	store, _ := backend.Open(context.Background(), "mem://", nil)
	defer store.Close()
	cfg, _ := Parse([]byte(`{"mcpServers": {"a": {"command": "a", "hybridctx": {"prefix": ""}}, "b": {"command": "b", "hybridctx": {"prefix": ""}}}}`), nil)
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	servers := map[string]*goServer{"a": {name: "a"}, "b": {name: "b"}}
	gw, err := New(cfg, off, reh, &Options{KeepAlive: -1, Transport: func(s *Server) (mcp.Transport, error) { return servers[s.Name].transport() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "collide") {
		t.Fatalf("Start = %v, want a name collision", err)
	}
}

// TestGatewayReservesDefaultReadToolNames: under a policy that leaves the
// read tools' names to their defaults, an unprefixed server's tool named
// like one of them collides with the gateway's own tool; it never takes
// the name.
func TestGatewayReservesDefaultReadToolNames(t *testing.T) {
	for _, name := range []string{hybridctx.DefaultReadToolName, hybridctx.DefaultSearchToolName, hybridctx.DefaultQueryToolName} {
		store, _ := backend.Open(context.Background(), "mem://", nil)
		cfg, _ := Parse([]byte(`{"mcpServers": {"a": {"command": "a", "hybridctx": {"prefix": ""}}}}`), nil)
		bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, store)
		off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
		reh, _ := hybridctx.NewRehydrator(bind, nil)
		up := &goServer{name: "a", also: name}
		gw, err := New(cfg, off, reh, &Options{KeepAlive: -1, Transport: func(*Server) (mcp.Transport, error) { return up.transport() }})
		if err != nil {
			t.Fatal(err)
		}
		if err := gw.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "the gateway's own tool") {
			t.Errorf("%s: Start = %v, want a collision with the gateway's own tool", name, err)
		}
		_ = store.Close()
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestGatewayTooManyToolsAndAllowList(t *testing.T) {
	cfg := `{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b", "hybridctx": {"tools": ["t1", "big"], "disabledTools": ["big"]}}}}`
	f := newFixture(t, cfg, &goServer{name: "a", many: 10000}, &goServer{name: "b", many: 10000})
	// Listing 10,000 tools may outlast the ready wait on a slow machine.
	waitFor(t, func() bool { return strings.Contains(strings.Join(f.toolNames(t), ","), "b__t1") })
	names := f.toolNames(t)
	joined := "," + strings.Join(names, ",") + ","
	if strings.Contains(joined, ",a__") {
		t.Errorf("a server listing 10,000 tools is served: %d tools", len(names))
	}
	if !strings.Contains(joined, ",b__t1,") || strings.Contains(joined, ",b__big,") || strings.Contains(joined, ",b__t2,") {
		t.Errorf("allow and deny lists not applied: %s", joined)
	}
}

func TestGatewayResourcesFirstServerWins(t *testing.T) {
	f := newFixture(t, twoServers, &goServer{name: "a"}, &goServer{name: "b"})
	res, err := f.client.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///shared"})
	if err != nil || res.Contents[0].Text != "from a" {
		t.Fatalf("read: %v %+v", err, res)
	}
	f.servers["a"].kill()
	waitFor(t, func() bool {
		res, err := f.client.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///shared"})
		return err == nil && res.Contents[0].Text == "from b"
	})
}

// TestGatewayRoutesProgress: the server's progress reaches the client
// under the client's own token (the gateway's token upstream).
