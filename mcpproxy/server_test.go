package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
	"github.com/hybridctx/hybridctx/readtools"
)

// boundedServer is a Go MCP server that bounds its own results.
func boundedServer(t *testing.T, ev *events) (*mcp.ClientSession, *mcp.Tool) {
	t.Helper()
	store := openStore(t, "mem://")
	bind, _ := hybridctx.NewBinding(owner("s1"), store)
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reh, _ := hybridctx.NewRehydrator(bind, nil)

	s := mcp.NewServer(&mcp.Implementation{Name: "bounded", Version: "1"}, nil)
	typed := &mcp.Tool{Name: "typed", InputSchema: objectSchema}
	type out struct {
		Rows string `json:"rows"`
	}
	mcp.AddTool(s, typed, func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, out, error) {
		n, _ := in["size"].(float64)
		return nil, out{Rows: text(int(n))}, nil
	})
	withSchema := &mcp.Tool{Name: "with_schema", InputSchema: objectSchema, OutputSchema: objectSchema}
	s.AddTool(withSchema, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]int{"n": 1}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "blocks", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "small"},
			&mcp.ImageContent{Data: binary(2 * testThreshold), MIMEType: "image/png"},
			&mcp.AudioContent{Data: binary(3 * testThreshold), MIMEType: "audio/wav"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///t.txt", Text: text(2 * testThreshold)}},
			&mcp.ResourceLink{URI: "file:///huge", Name: "huge", Description: text(2 * testThreshold)},
		}}, nil
	})
	var o *Options
	if ev != nil {
		o = &Options{Reporter: ev.reporter()}
	}
	s.AddReceivingMiddleware(Middleware(off, o))
	if err := AddReadTools(s, reh, &Options{Budget: testBudget}); err != nil {
		t.Fatal(err)
	}
	return connectServer(t, s), withSchema
}

func TestMiddleware(t *testing.T) {
	ev := &events{}
	cs, withSchema := boundedServer(t, ev)
	r := &rig{cs: cs}
	ctx := context.Background()

	// A typed tool: its structured output is bounded too.
	small := r.call(t, "typed", map[string]any{"size": 10})
	if small.StructuredContent == nil || len(small.Content) != 1 {
		t.Fatalf("small: %s", dump(small))
	}
	large := r.call(t, "typed", map[string]any{"size": 3 * testThreshold})
	want, _ := json.Marshal(map[string]string{"rows": text(3 * testThreshold)})
	if large.StructuredContent != nil || linkOf(t, large).URI != artifact.RefOf(want).String() {
		t.Fatalf("large: %s", dump(large))
	}
	// The read tool's results are recovered content: never offloaded again,
	// even above the threshold.
	got := r.readAll(t, linkOf(t, large).URI, testBudget)
	if string(got) != string(want) {
		t.Fatal("read back differs")
	}
	if ev.count(hybridctx.Offloaded) != 1 {
		t.Fatalf("%d offloaded events, want 1 (text and structured share a body)", ev.count(hybridctx.Offloaded))
	}

	// Every kind of block is decided: five of the blocks are replaced.
	blocks := r.call(t, "blocks", nil)
	links := 0
	for _, c := range blocks.Content {
		if _, ok := c.(*mcp.ResourceLink); ok {
			links++
		}
	}
	if texts(blocks)[0] != "small" || links != 4 || len(blocks.Content) != 9 {
		t.Fatalf("blocks: %s", dump(blocks))
	}

	// tools/list: output schemas removed from the answer only.
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.OutputSchema != nil {
			t.Fatalf("%s kept its outputSchema", tl.Name)
		}
	}
	if len(tools.Tools) != 6 {
		t.Fatalf("tools %s", dump(tools))
	}
	if withSchema.OutputSchema == nil {
		t.Fatal("the server's own tool lost its outputSchema")
	}
	// The resource template serves the same checks.
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: linkOf(t, large).URI}); err != nil {
		t.Fatalf("resources/read: %v", err)
	}
}

func TestMiddlewarePanicsWithoutOffloader(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	Middleware(nil, nil)
}

func TestMiddlewareCancelled(t *testing.T) {
	store := openStore(t, "mem://")
	bind, _ := hybridctx.NewBinding(owner("s1"), store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4}, nil)
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) { return textResult("hello world"), nil }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t"}}
	if _, err := Middleware(off, nil)(next)(ctx, "tools/call", req); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	// Errors and other methods pass through.
	boom := errors.New("boom")
	failing := func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, boom }
	if _, err := Middleware(off, nil)(failing)(context.Background(), "tools/call", req); err != boom {
		t.Fatalf("err %v", err)
	}
	res, err := Middleware(off, nil)(next)(context.Background(), "custom/method", req)
	if err != nil || len(res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text) != 11 {
		t.Fatalf("other method: %v", err)
	}
}

func TestAddReadToolsErrors(t *testing.T) {
	store := openStore(t, "mem://")
	bind, _ := hybridctx.NewBinding(owner("s1"), store)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	for name, err := range map[string]error{
		"nil rehydrator": AddReadTools(s, nil, nil),
		"budget":         AddReadTools(s, reh, &Options{Budget: -5}),
		"tool name":      AddReadTools(s, reh, &Options{Names: readtools.Names{Read: "no spaces"}}),
	} {
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := AddReadTools(s, reh, &Options{Names: readtools.Names{Read: "fetch_artifact"}}); err != nil {
		t.Fatal(err)
	}
}

func TestTypedFallsBackToJSON(t *testing.T) {
	b := &bound.Bounder{Off: mustOffloader(t, 100)}
	// Oversized metadata: the whole block, so nothing unbounded stays inline.
	big := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi", Meta: mcp.Meta{"k": strings.Repeat("m", 200)}}}}
	out, err := b.Typed(context.Background(), hybridctx.Call{Tool: "t"}, big)
	if err != nil || len(out.Content) != 2 || strings.Contains(dump(out), "mmmm") {
		t.Fatalf("%v %s", err, dump(out))
	}
	if l, ok := out.Content[1].(*mcp.ResourceLink); !ok || l.MIMEType != mimeJSON {
		t.Fatalf("%s", dump(out))
	}
	// Small metadata: the payload, and the annotations carried over.
	ann := &mcp.Annotations{Audience: []mcp.Role{"user"}}
	img := &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: binary(150), MIMEType: `bad\mime`, Annotations: ann}}}
	out, err = b.Typed(context.Background(), hybridctx.Call{Tool: "t"}, img)
	if err != nil || len(out.Content) != 2 {
		t.Fatalf("%v %s", err, dump(out))
	}
	if l, ok := out.Content[1].(*mcp.ResourceLink); !ok || l.MIMEType != mimeBinary || *l.Size != 150 || l.Annotations == nil || l.Annotations.Audience[0] != "user" {
		t.Fatalf("%s", dump(out))
	}
}

func mustOffloader(t *testing.T, threshold int64) *hybridctx.Offloader {
	t.Helper()
	bind, _ := hybridctx.NewBinding(owner("s1"), openStore(t, "mem://"))
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: threshold}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// TestMiddlewareRenamedReadTool: the middleware knows the read tools by the
// names Options gives them, as AddReadTools registers them; a renamed read
// tool's answer above the threshold is recovered content, never stored and
// replaced by a notice again.
func TestMiddlewareRenamedReadTool(t *testing.T) {
	store := openStore(t, "mem://")
	bind, _ := hybridctx.NewBinding(owner("s1"), store)
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	s := mcp.NewServer(&mcp.Implementation{Name: "renamed", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "large", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text(3 * testThreshold)}}}, nil
	})
	opts := &Options{Budget: testBudget, Names: readtools.Names{Read: "fetch_artifact", Search: "grep_artifact"}}
	s.AddReceivingMiddleware(Middleware(off, opts))
	if err := AddReadTools(s, reh, opts); err != nil {
		t.Fatal(err)
	}
	r := &rig{cs: connectServer(t, s)}
	ref := linkOf(t, r.call(t, "large", nil)).URI
	want := text(3 * testThreshold)
	got := r.call(t, "fetch_artifact", map[string]any{"reference": ref, "length": len(want)})
	if got.IsError || len(got.Content) != 1 || texts(got)[0] != want {
		t.Fatalf("the renamed read tool's answer was bounded again: %.300s", dump(got))
	}
	found := r.call(t, "grep_artifact", map[string]any{"reference": ref, "pattern": "."})
	if found.IsError || len(found.Content) != 1 {
		t.Fatalf("the renamed search tool's answer was bounded again: %.300s", dump(found))
	}
}

// connectServer connects a client to s over in-memory transports; both
// end with the test.
func connectServer(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	srvT, cliT := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), srvT, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), cliT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Close() })
	return cs
}
