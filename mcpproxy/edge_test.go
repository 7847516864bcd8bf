package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
	"github.com/hybridctx/hybridctx/readtools"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// scripted is an upstream Connection that answers each request with
// answer(method); it can be told to fail writes.
type scripted struct {
	answer    func(method string) (json.RawMessage, error)
	failWrite bool
	out       chan jsonrpc.Message
	once      sync.Once
	closed    chan struct{}
}

func newScripted(answer func(string) (json.RawMessage, error)) *scripted {
	return &scripted{answer: answer, out: make(chan jsonrpc.Message, 16), closed: make(chan struct{})}
}

func (s *scripted) Connect(context.Context) (mcp.Connection, error) { return s, nil }
func (s *scripted) SessionID() string                               { return "" }
func (s *scripted) Close() error                                    { s.once.Do(func() { close(s.closed) }); return nil }

func (s *scripted) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-s.out:
		return m, nil
	case <-s.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *scripted) Write(_ context.Context, m jsonrpc.Message) error {
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.ID.IsValid() {
		return nil
	}
	if s.failWrite && req.Method != "initialize" {
		return errors.New("broken pipe")
	}
	res, err := s.answer(req.Method)
	s.out <- &jsonrpc.Response{ID: req.ID, Result: res, Error: err}
	return nil
}

var notFound = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}

// legacyInit answers initialize with a server that has no capabilities.
func legacyInit(method string) (json.RawMessage, error) {
	if method == "initialize" {
		return json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"raw","version":"1"}}`), nil
	}
	return nil, notFound
}

func connectScripted(t *testing.T, p *Proxy, up *scripted) *mcp.ClientSession {
	t.Helper()
	proxyT, clientT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background(), up, proxyT) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).
		Connect(context.Background(), clientT, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); <-done })
	return cs
}

func TestMethodNotFoundListsAnsweredLocally(t *testing.T) {
	cs := connectScripted(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), nil), newScripted(legacyInit))
	ctx := context.Background()
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || caps.Resources == nil {
		t.Fatalf("capabilities %s", dump(caps))
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 3 || tools.Tools[0].Name != "read_artifact" || tools.Tools[1].Name != "search_artifact" || tools.Tools[2].Name != "query_artifact" {
		t.Fatalf("tools: %v %s", err, dump(tools))
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != ArtifactURITemplate {
		t.Fatalf("templates: %v %s", err, dump(tmpl))
	}
	res, err := cs.ListResources(ctx, nil)
	if err != nil || len(res.Resources) != 0 {
		t.Fatalf("resources: %v %s", err, dump(res))
	}
	// Other errors pass as they are.
	if _, err := cs.ListPrompts(ctx, nil); err == nil || !strings.Contains(err.Error(), "method not found") {
		t.Fatalf("prompts: %v", err)
	}
}

func TestUpstreamWriteFailure(t *testing.T) {
	up := newScripted(legacyInit)
	up.failWrite = true
	cs := connectScripted(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), nil), up)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "x", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "could not be sent to the upstream MCP server") {
		t.Fatalf("err %v", err)
	}
}

func TestCustomReadToolName(t *testing.T) {
	store := openStore(t, "mem://")
	bind, _ := hybridctx.NewBinding(owner("s1"), store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold, ReadToolName: "fetch_result"}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	p, err := NewProxy(off, reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, p, nil)
	res := r.call(t, "large", nil)
	if !strings.Contains(texts(res)[0], "read its lines with fetch_result {") {
		t.Fatalf("notice %q", texts(res)[0])
	}
	if got := r.call(t, "fetch_result", map[string]any{"reference": linkOf(t, res).URI, "length": 10}); got.IsError {
		t.Fatalf("%s", dump(got))
	}
}

func TestReadMissingAndStale(t *testing.T) {
	mem := memstore.New()
	inst := drivertest.Instrument(mem, mem, nil)
	store := workspace.New(inst, inst)
	r := newRig(t, proxyFor(t, store, owner("s1"), nil), nil)
	ctx := context.Background()
	ref := linkOf(t, r.call(t, "large", nil)).URI
	parsed, _ := artifact.ParseRef(ref)

	if !inst.Tamper(parsed.Hex(), []byte(strings.Repeat("x", 3*testThreshold))) {
		t.Fatal("tamper failed")
	}
	got := r.call(t, "read_artifact", map[string]any{"reference": ref, "length": 10})
	if !got.IsError || !strings.HasPrefix(texts(got)[0], "hybridctx: stale (digest_mismatch): ") {
		t.Fatalf("stale: %s", dump(got))
	}
	if _, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: ref}); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("stale resource: %v", err)
	}
	if err := store.DeleteBody(ctx, parsed); err != nil {
		t.Fatal(err)
	}
	got = r.call(t, "read_artifact", map[string]any{"reference": ref, "length": 10})
	if !got.IsError || !strings.HasPrefix(texts(got)[0], "hybridctx: missing (body_missing): ") {
		t.Fatalf("missing: %s", dump(got))
	}
	if _, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: ref}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing resource: %v", err)
	}
	// Offloading the same content again restores it.
	r.call(t, "large", nil)
	if got := r.call(t, "read_artifact", map[string]any{"reference": ref, "length": 10}); got.IsError {
		t.Fatalf("restored: %s", dump(got))
	}
}

func TestReadCancelled(t *testing.T) {
	store := openStore(t, "mem://")
	bind, _ := hybridctx.NewBinding(owner("s1"), store)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	r, err := newReader(reh, nil)
	if err != nil || r.setNames(readtools.Names{}) != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.callTool(ctx, "read_artifact", json.RawMessage(`{"reference":"x"}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("tool: %v", err)
	}
	if _, err := r.readResource(ctx, "artifact://sha256/x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("resource: %v", err)
	}
}

func TestWireError(t *testing.T) {
	we := &jsonrpc.Error{Code: 7, Message: "m"}
	for err, want := range map[error]string{
		we:                         "m",
		context.Canceled:           "hybridctx: request cancelled",
		context.DeadlineExceeded:   "hybridctx: request cancelled",
		errors.New("/secret/path"): "hybridctx: internal error",
	} {
		var got *jsonrpc.Error
		if !errors.As(wireError(err), &got) || got.Message != want {
			t.Errorf("%v → %v, want %q", err, wireError(err), want)
		}
	}
}

func TestBoundTypedErrors(t *testing.T) {
	b := &bound.Bounder{Off: mustOffloader(t, 4)}
	res := &mcp.CallToolResult{StructuredContent: make(chan int)}
	if _, err := b.Typed(context.Background(), hybridctx.Call{}, res); err == nil {
		t.Fatal("unencodable structuredContent accepted")
	}
	// Oversized _meta alone is decided and removed (here, with a bound
	// of 16 bytes, folded with the content).
	big := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, Meta: mcp.Meta{"pad": strings.Repeat("p", 50)}}
	out, err := b.Typed(context.Background(), hybridctx.Call{}, big)
	if err != nil || out.Meta != nil || len(out.Content) < 2 || big.Meta == nil || len(big.Content) != 1 {
		t.Fatalf("%v %s", err, dump(out))
	}
}

func TestMIMECacheBounded(t *testing.T) {
	c := mimeCache{m: map[artifact.Ref]string{}}
	for i := range maxMIMEs + 10 {
		c.put(artifact.RefOf([]byte{byte(i), byte(i >> 8)}), "image/png")
	}
	c.put(artifact.RefOf([]byte("t")), mimeText)
	if len(c.m) != maxMIMEs || c.get(artifact.RefOf([]byte("t"))) != "" {
		t.Fatalf("%d entries", len(c.m))
	}
}

func TestCommandKillsStubbornUpstream(t *testing.T) {
	r := newCommandRig(t, "stubborn", &Command{TerminateDuration: 50 * time.Millisecond})
	_ = r.cs.Close()
	if err := r.wait(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := r.cmd.ProcessState; st == nil || !strings.Contains(st.String(), "killed") {
		t.Fatalf("want SIGKILL, got %v", st)
	}
}
