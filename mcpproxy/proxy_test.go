package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

func TestToolResultsBounded(t *testing.T) {
	ev := &events{}
	r := newRig(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), ev), nil)

	// Small and exactly-at-threshold results pass unchanged.
	if got := texts(r.call(t, "small", nil)); len(got) != 1 || got[0] != "hello" {
		t.Fatalf("small: %q", got)
	}
	exact := r.call(t, "exact", nil)
	if got := texts(exact); len(exact.Content) != 1 || got[0] != text(testThreshold) {
		t.Fatalf("exact: %s", dump(exact))
	}

	// One byte over: the notice and a link to the stored body.
	big := text(testThreshold + 1)
	res := r.call(t, "large", map[string]any{"size": testThreshold + 1})
	if len(res.Content) != 2 || res.IsError {
		t.Fatalf("large: %s", dump(res))
	}
	notice := texts(res)[0]
	ref := artifact.RefOf([]byte(big)).String()
	if first, _, _ := strings.Cut(notice, "\n"); first != ref || len(notice) > hybridctx.MaxNoticeLen {
		t.Fatalf("notice %q, want first line %s", notice, ref)
	}
	link := linkOf(t, res)
	if link.URI != ref || link.Size == nil || *link.Size != int64(len(big)) || link.MIMEType != "text/plain" || link.Name == "" {
		t.Fatalf("link %s", dump(link))
	}
	if got := r.readAll(t, ref, 1000); string(got) != big {
		t.Fatalf("read back %d bytes, want the %d stored", len(got), len(big))
	}

	// Multi-block: only the large block is replaced, in place.
	multi := r.call(t, "multi", nil)
	if got := texts(multi); len(multi.Content) != 4 || got[0] != "first" || got[2] != "last" ||
		!strings.HasPrefix(got[1], artifact.RefOf([]byte(text(2*testThreshold))).String()) {
		t.Fatalf("multi: %s", dump(multi))
	}
	if _, ok := multi.Content[2].(*mcp.ResourceLink); !ok {
		t.Fatalf("multi: block 2 is %T", multi.Content[2])
	}

	// Image, audio and embedded blobs are stored as their bytes.
	for name, want := range map[string]struct {
		body []byte
		mime string
	}{
		"image":    {binary(2 * testThreshold), "image/png"},
		"audio":    {binary(3 * testThreshold), "audio/wav"},
		"embedded": {binary(2*testThreshold + 7), "application/x-data"},
	} {
		res := r.call(t, name, nil)
		l := linkOf(t, res)
		if l.URI != artifact.RefOf(want.body).String() || l.MIMEType != want.mime || *l.Size != int64(len(want.body)) {
			t.Fatalf("%s: %s", name, dump(res))
		}
		if !strings.Contains(texts(res)[0], "binary;") {
			t.Fatalf("%s notice: %q", name, texts(res)[0])
		}
		got := r.call(t, "read_artifact", map[string]any{"reference": l.URI})
		emb, ok := got.Content[0].(*mcp.EmbeddedResource)
		if !ok || !bytes.Equal(emb.Resource.Blob, want.body) || emb.Resource.MIMEType != want.mime {
			t.Fatalf("%s read back: %s", name, dump(got))
		}
	}
	if n := ev.count(hybridctx.Offloaded); n != 5 {
		t.Fatalf("%d offloaded events, want 5", n)
	}
	if n := ev.count(hybridctx.Inline); n != 4 {
		t.Fatalf("%d inline events, want 4 (small, exact, two multi blocks)", n)
	}
}

func TestStructuredContent(t *testing.T) {
	r := newRig(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), nil), nil)

	// Small: structuredContent passes unchanged.
	small := r.call(t, "structured", map[string]any{"size": 10})
	want, _ := json.Marshal(map[string]string{"content": text(10)})
	if got, _ := json.Marshal(small.StructuredContent); string(got) != string(want) || len(small.Content) != 1 {
		t.Fatalf("small structured: %s", dump(small))
	}

	// Large: structuredContent is removed; its JSON is stored and the notice
	// and link replace it. Here the text block holds the same JSON, so both
	// share one reference and one notice.
	large := r.call(t, "structured", map[string]any{"size": 4 * testThreshold})
	v, _ := json.Marshal(map[string]string{"content": text(4 * testThreshold)})
	if large.StructuredContent != nil || len(large.Content) != 2 {
		t.Fatalf("large structured: %s", dump(large))
	}
	if l := linkOf(t, large); l.URI != artifact.RefOf(v).String() {
		t.Fatalf("link %s, want the structured JSON's reference", l.URI)
	}
	if got := r.readAll(t, artifact.RefOf(v).String(), testBudget); !bytes.Equal(got, v) {
		t.Fatal("structured JSON did not read back")
	}

	// tools/list: outputSchema removed (a bounded result cannot promise it);
	// the read tool added.
	tools, err := r.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
		if tl.OutputSchema != nil {
			t.Fatalf("tool %s kept its outputSchema", tl.Name)
		}
	}
	if !names["read_artifact"] || !names["structured"] || !names["search_artifact"] || !names["query_artifact"] || len(tools.Tools) != 14 {
		t.Fatalf("tools %v", names)
	}
}

func TestStructuredContentDistinct(t *testing.T) {
	// A result whose text and structured payloads differ gets two notices.
	up := newUpstream()
	sc := map[string]any{"rows": strings.Repeat("x", 2*testThreshold)}
	up.srv.AddTool(&mcp.Tool{Name: "both", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text(2 * testThreshold)}}, StructuredContent: sc}, nil
	})
	r := newRig(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), nil), &rigOptions{up: up})
	res := r.call(t, "both", nil)
	if res.StructuredContent != nil || len(res.Content) != 4 {
		t.Fatalf("%s", dump(res))
	}
}

func TestFailedOffloadShowsCategoricalNotice(t *testing.T) {
	store := openStore(t, "mem://")
	bind, _ := hybridctx.NewBinding(owner("s1"), store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold, MaxArtifactBytes: 2 * testThreshold}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	p, err := NewProxy(off, reh, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, p, nil)
	res := r.call(t, "large", map[string]any{"size": 3 * testThreshold})
	got := texts(res)
	if len(res.Content) != 1 || !strings.HasPrefix(got[0], "hybridctx: failed (exceeds_max_artifact_size), 3072 bytes\n") {
		t.Fatalf("%s", dump(res))
	}
}

func TestReadArtifact(t *testing.T) {
	store := openStore(t, "mem://")
	r := newRig(t, proxyFor(t, store, owner("s1"), nil), nil)
	body := text(10000)
	ref := linkOf(t, r.call(t, "large", map[string]any{"size": 10000})).URI

	read := func(args map[string]any) *mcp.CallToolResult { return r.call(t, "read_artifact", args) }
	// Ranged; the range is clamped like an HTTP range.
	if got := read(map[string]any{"reference": ref, "offset": 100, "length": 50}); got.IsError || texts(got)[0] != body[100:150] {
		t.Fatalf("ranged: %s", dump(got))
	}
	if got := read(map[string]any{"reference": ref, "offset": 9990, "length": 50}); texts(got)[0] != body[9990:] {
		t.Fatalf("clamped: %s", dump(got))
	}
	past := read(map[string]any{"reference": ref, "offset": 20000})
	if past.IsError || texts(past)[0] != "" || past.Meta[MetaBodySize] != float64(10000) {
		t.Fatalf("past the end: %s", dump(past))
	}
	// Resolved pages carry the range in _meta.
	page := read(map[string]any{"reference": ref, "offset": 5, "length": 7})
	if page.Meta[MetaOffset] != float64(5) || page.Meta[MetaLength] != float64(7) {
		t.Fatalf("meta %v", page.Meta)
	}

	cases := []struct {
		name string
		args any
		want string
	}{
		{"over the cap", map[string]any{"reference": ref}, "hybridctx: over_budget (budget_exceeded): the range is 10000 bytes, the budget 4096; use read_artifact with offset/length"},
		{"over max_bytes", map[string]any{"reference": ref, "length": 200, "max_bytes": 100}, "the range is 200 bytes, the budget 100;"},
		{"unauthorized", map[string]any{"reference": artifact.RefOf([]byte("never stored")).String()}, "hybridctx: unauthorized (owner_mismatch): no artifact with this reference belongs to this conversation"},
		{"invalid", map[string]any{"reference": strings.ToUpper(ref)}, "hybridctx: invalid_reference (malformed_reference): a reference is artifact://sha256/"},
		{"no reference", map[string]any{"offset": 1}, "hybridctx: read_artifact: invalid arguments: reference is required; expected"},
		{"bad offset", map[string]any{"reference": ref, "offset": -1}, "offset must be >= 0"},
		{"bad max_bytes", map[string]any{"reference": ref, "max_bytes": 0}, "max_bytes must be >= 1"},
		{"unknown key", map[string]any{"reference": ref, "path": "/etc"}, `unknown field "path"`},
		{"string length", map[string]any{"reference": ref, "length": "10"}, "length must be an integer"},
	}
	for _, c := range cases {
		got := r.call(t, "read_artifact", c.args)
		if !got.IsError || len(got.Content) != 1 || !strings.Contains(texts(got)[0], c.want) {
			t.Errorf("%s: %s, want isError with %q", c.name, dump(got), c.want)
		}
		if strings.Contains(texts(got)[0], "\n") {
			t.Errorf("%s: message is not one line: %q", c.name, texts(got)[0])
		}
	}

	// A recovered read bigger than the threshold is never offloaded again.
	whole := read(map[string]any{"reference": ref, "length": testBudget})
	if whole.IsError || texts(whole)[0] != body[:testBudget] {
		t.Fatalf("a page over the threshold: %s", dump(whole))
	}
}

func TestSessionsIsolated(t *testing.T) {
	// Two proxies, two sessions, one directory workspace.
	dir := t.TempDir()
	store := openStore(t, dir)
	a := newRig(t, proxyFor(t, store, owner("session-a"), nil), nil)
	b := newRig(t, proxyFor(t, openStore(t, dir), owner("session-b"), nil), nil)
	ref := linkOf(t, a.call(t, "large", nil)).URI

	if got := b.call(t, "read_artifact", map[string]any{"reference": ref, "length": 10}); !got.IsError ||
		!strings.Contains(texts(got)[0], "unauthorized") {
		t.Fatalf("session b read a's artifact: %s", dump(got))
	}
	if _, err := b.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: ref}); err == nil {
		t.Fatal("session b read a's artifact as a resource")
	}
	if got := a.call(t, "read_artifact", map[string]any{"reference": ref, "length": 10}); got.IsError {
		t.Fatalf("session a cannot read its own artifact: %s", dump(got))
	}
	// The same content offloaded by b becomes b's own, readable by b.
	if ref2 := linkOf(t, b.call(t, "large", nil)).URI; ref2 != ref {
		t.Fatal("same content, different reference")
	}
	if got := b.call(t, "read_artifact", map[string]any{"reference": ref, "length": 10}); got.IsError {
		t.Fatalf("b after offloading the same content: %s", dump(got))
	}
}

func TestResourcesRead(t *testing.T) {
	r := newRig(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), nil), nil)
	ctx := context.Background()
	small := text(testBudget)
	ref := linkOf(t, r.call(t, "large", map[string]any{"size": testBudget})).URI

	got, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: ref})
	if err != nil || len(got.Contents) != 1 || got.Contents[0].Text != small || got.Contents[0].URI != ref ||
		got.Contents[0].MIMEType != "text/plain" {
		t.Fatalf("resolved: %v %s", err, dump(got))
	}
	img := linkOf(t, r.call(t, "image", nil)).URI
	if got, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: img}); err != nil ||
		!bytes.Equal(got.Contents[0].Blob, binary(2*testThreshold)) || got.Contents[0].MIMEType != "image/png" {
		t.Fatalf("image: %v %s", err, dump(got))
	}

	big := linkOf(t, r.call(t, "large", map[string]any{"size": testBudget + 1})).URI
	for name, c := range map[string]struct{ uri, want string }{
		"over budget":  {big, "over_budget (budget_exceeded): the range is 4097 bytes, the budget 4096"},
		"unauthorized": {artifact.RefOf([]byte("x")).String(), "Resource not found"},
		"invalid":      {"artifact://sha256/abc", "invalid_reference"},
	} {
		_, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: c.uri})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}

	// Other URIs are the upstream's.
	if got, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///hello.txt"}); err != nil || got.Contents[0].Text != "hello resource" {
		t.Fatalf("upstream resource: %v %s", err, dump(got))
	}
	tmpl, err := r.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != ArtifactURITemplate {
		t.Fatalf("templates: %v %s", err, dump(tmpl))
	}
	if err := r.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: ref}); err != nil {
		t.Fatalf("subscribe to an artifact: %v", err)
	}
}

func TestCancellationForwarded(t *testing.T) {
	r := newRig(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), nil), nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		errc <- err
	}()
	<-r.up.slowStarted
	cancel()
	select {
	case <-r.up.slowCancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream tool never saw its context cancelled")
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("client error %v", err)
	}
	// The session still works.
	if got := texts(r.call(t, "small", nil)); got[0] != "hello" {
		t.Fatal(got)
	}
}

func TestForwardsEverything(t *testing.T) {
	progress := make(chan *mcp.ProgressNotificationParams, 1)
	changed := make(chan struct{}, 1)
	r := newRig(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), nil), &rigOptions{client: &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress <- req.Params },
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "pong"}}, nil
		},
	}, protocol: "2025-11-25"}) // server-to-client requests need the stateful protocol
	ctx := context.Background()

	caps := r.cs.InitializeResult().Capabilities
	if caps.Tools == nil || caps.Resources == nil || caps.Prompts == nil {
		t.Fatalf("capabilities %s", dump(caps))
	}
	p, err := r.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"})
	if err != nil || p.Messages[0].Content.(*mcp.TextContent).Text != "hi" {
		t.Fatalf("prompt: %v", err)
	}
	res, err := r.cs.ListResources(ctx, nil)
	if err != nil || len(res.Resources) != 1 {
		t.Fatalf("resources: %v %s", err, dump(res))
	}
	// Progress notifications reach the client; the result is still bounded.
	params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	params.SetProgressToken("tok-1")
	out, err := r.cs.CallTool(ctx, params)
	if err != nil || len(out.Content) != 2 {
		t.Fatalf("progress tool: %v %s", err, dump(out))
	}
	select {
	case pn := <-progress:
		if pn.ProgressToken != "tok-1" || pn.Message != "half" {
			t.Fatalf("progress %s", dump(pn))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification")
	}
	// A request from the upstream to the client (sampling) and its answer.
	if got := texts(r.call(t, "sample", nil)); len(got) != 1 || got[0] != "pong" {
		t.Fatalf("sampling: %q", got)
	}
	// A list-changed notification from the upstream.
	r.up.srv.AddTool(&mcp.Tool{Name: "late", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("late"), nil
	})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed")
	}
	if got := texts(r.call(t, "late", nil)); got[0] != "late" {
		t.Fatal(got)
	}
	if err := r.cs.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

func TestUpstreamWithoutToolsOrResources(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "prompts-only", Version: "1"}, nil)
	s.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	r := newRig(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), nil), &rigOptions{up: &upstream{srv: s}})
	ctx := context.Background()
	caps := r.cs.InitializeResult().Capabilities
	if caps.Tools == nil || caps.Resources == nil {
		t.Fatalf("capabilities %s", dump(caps))
	}
	tools, err := r.cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 3 || tools.Tools[0].Name != "read_artifact" || tools.Tools[1].Name != "search_artifact" || tools.Tools[2].Name != "query_artifact" {
		t.Fatalf("tools: %v %s", err, dump(tools))
	}
	tmpl, err := r.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 {
		t.Fatalf("templates: %v %s", err, dump(tmpl))
	}
	if res, err := r.cs.ListResources(ctx, nil); err != nil || len(res.Resources) != 0 {
		t.Fatalf("resources: %v %s", err, dump(res))
	}
	if got := r.call(t, "read_artifact", map[string]any{"reference": "x"}); !got.IsError {
		t.Fatal(dump(got))
	}
}

func TestUpstreamExit(t *testing.T) {
	r := newRig(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), nil), nil)
	errc := make(chan error, 1)
	go func() {
		_, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		errc <- err
	}()
	<-r.up.slowStarted
	_ = r.up.conn.Close() // the upstream goes away mid-call
	select {
	case err := <-r.done:
		if !errors.Is(err, ErrUpstreamClosed) {
			t.Fatalf("Run: %v", err)
		}
		r.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("proxy did not stop when the upstream did")
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the pending call succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pending call was never answered")
	}
}

func TestClientExit(t *testing.T) {
	r := newRig(t, proxyFor(t, openStore(t, "mem://"), owner("s1"), nil), nil)
	_ = r.cs.Close()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Run after the client closed: %v", err)
		}
		r.done <- err
	case <-time.After(10 * time.Second):
		t.Fatal("proxy did not stop")
	}
}

func TestRunCancelled(t *testing.T) {
	p := proxyFor(t, openStore(t, "mem://"), owner("s1"), nil)
	srvT, upT := mcp.NewInMemoryTransports()
	if _, err := newUpstream().srv.Connect(context.Background(), srvT, nil); err != nil {
		t.Fatal(err)
	}
	proxyT, _ := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, upT, proxyT) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}

func TestNewProxyErrors(t *testing.T) {
	store := openStore(t, "mem://")
	bind, _ := hybridctx.NewBinding(owner("s1"), store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 1}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	for name, f := range map[string]func() error{
		"nil offloader":   func() error { _, err := NewProxy(nil, reh, nil); return err },
		"nil rehydrator":  func() error { _, err := NewProxy(off, nil, nil); return err },
		"negative budget": func() error { _, err := NewProxy(off, reh, &Options{Budget: -1}); return err },
	} {
		if err := f(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

type failingTransport struct{ err error }

func (f failingTransport) Connect(context.Context) (mcp.Connection, error) { return nil, f.err }

func TestRunConnectErrors(t *testing.T) {
	p := proxyFor(t, openStore(t, "mem://"), owner("s1"), nil)
	boom := errors.New("boom")
	if err := p.Run(context.Background(), failingTransport{boom}, nil); !errors.Is(err, ErrUpstreamStart) || !errors.Is(err, boom) {
		t.Fatalf("upstream: %v", err)
	}
	_, upT := mcp.NewInMemoryTransports()
	if err := p.Run(context.Background(), upT, failingTransport{boom}); !errors.Is(err, ErrClient) {
		t.Fatalf("client: %v", err)
	}
}
