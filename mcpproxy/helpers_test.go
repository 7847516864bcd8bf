//lint:file-ignore SA1019 MCP sampling is deprecated as of protocol 2026-07-28 but still served by the SDK; these tests prove the proxy forwards it.

package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/workspace"
)

const (
	testThreshold = 1024
	testBudget    = 4096
)

// owner returns a test owner whose fields carry unique markers.
func owner(session string) artifact.Owner {
	return artifact.Owner{User: "user-MARK-u7", Workflow: "flow-MARK-w7", Session: session}
}

// openStore opens a workspace (mem:// or a directory) closed at cleanup.
func openStore(t testing.TB, url string) *workspace.Store {
	t.Helper()
	s, err := backend.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// events collects the progress events of a test.
type events struct {
	mu  sync.Mutex
	all []*hybridctx.Event
}

func (e *events) Emit(_ context.Context, ev *hybridctx.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
	return nil
}

// count returns how many events had outcome o.
func (e *events) count(o hybridctx.Outcome) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.all {
		if ev.Diagnostics.Outcome() == o {
			n++
		}
	}
	return n
}

func (e *events) reporter() hybridctx.Reporter {
	return hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "run", AgentID: "proxy", Sinks: []hybridctx.Sink{e}})
}

// proxyFor builds a Proxy for owner on store.
func proxyFor(t testing.TB, store *workspace.Store, o artifact.Owner, ev *events) *Proxy {
	t.Helper()
	bind, err := hybridctx.NewBinding(o, store)
	if err != nil {
		t.Fatal(err)
	}
	off, err := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reh, err := hybridctx.NewRehydrator(bind, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &Options{Budget: testBudget}
	if ev != nil {
		opts.Reporter = ev.reporter()
	}
	p, err := NewProxy(off, reh, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// text returns n bytes of numbered lines.
func text(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %06d of a long tool result\n", i)
	}
	return b.String()[:n]
}

// binary returns n bytes that are not valid UTF-8.
func binary(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0x80 + i%120)
	}
	return b
}

// upstream is the in-process MCP server the proxy wraps in tests.
type upstream struct {
	srv *mcp.Server
	// slowStarted and slowCancelled report the slow tool's progress.
	slowStarted, slowCancelled chan struct{}
	// release ends a slow call that was not cancelled.
	release     chan struct{}
	releaseOnce sync.Once
	// conn is the server's end of the in-memory connection, once connected.
	conn mcp.Connection
}

// stop releases slow calls.
func (u *upstream) stop() { u.releaseOnce.Do(func() { close(u.release) }) }

var objectSchema = json.RawMessage(`{"type":"object"}`)

// newUpstream returns a server with tools returning small, exactly-at-
// threshold, large, multi-block, image, audio, embedded and structured
// results, a slow tool, a tool that asks the client to sample, a resource
// and a prompt.
func newUpstream() *upstream {
	u := &upstream{slowStarted: make(chan struct{}, 1), slowCancelled: make(chan struct{}, 1), release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	add := func(name string, res func(args map[string]any) *mcp.CallToolResult) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return res(args), nil
		})
	}
	size := func(args map[string]any) int {
		if n, ok := args["size"].(float64); ok {
			return int(n)
		}
		return 3 * testThreshold
	}
	add("small", func(map[string]any) *mcp.CallToolResult { return textResult("hello") })
	add("exact", func(map[string]any) *mcp.CallToolResult { return textResult(text(testThreshold)) })
	add("large", func(a map[string]any) *mcp.CallToolResult { return textResult(text(size(a))) })
	add("multi", func(map[string]any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "first"},
			&mcp.TextContent{Text: text(2 * testThreshold)}, &mcp.TextContent{Text: "last"}}}
	})
	add("image", func(map[string]any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: binary(2 * testThreshold), MIMEType: "image/png"}}}
	})
	add("audio", func(map[string]any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: binary(3 * testThreshold), MIMEType: "audio/wav"}}}
	})
	add("embedded", func(map[string]any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "file:///data.bin", MIMEType: "application/x-data", Blob: binary(2*testThreshold + 7)}}}}
	})
	s.AddTool(&mcp.Tool{Name: "structured", InputSchema: objectSchema, OutputSchema: objectSchema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			v, _ := json.Marshal(map[string]string{"content": text(size(args))})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(v)}}, StructuredContent: json.RawMessage(v)}, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: objectSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.slowStarted <- struct{}{}
		select {
		case <-ctx.Done():
			u.slowCancelled <- struct{}{}
			return nil, ctx.Err()
		case <-u.release:
			return textResult("not cancelled"), nil
		}
	})
	s.AddTool(&mcp.Tool{Name: "progress", InputSchema: objectSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		}
		return textResult(text(2 * testThreshold)), nil
	})
	s.AddTool(&mcp.Tool{Name: "sample", InputSchema: objectSchema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "ping"}}}})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "file:///hello.txt", Name: "hello", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///hello.txt", Text: "hello resource"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	u.srv = s
	return u
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// keepConn remembers the server's connection so a test can break it.
type keepConn struct {
	mcp.Transport
	u *upstream
}

func (k keepConn) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := k.Transport.Connect(ctx)
	k.u.conn = c
	return c, err
}

// wire records every JSON-RPC message between the client and the proxy.
type wire struct {
	mu   sync.Mutex
	msgs [][]byte
	// countOnly keeps the byte count, not the messages.
	countOnly bool
	n         int
}

func (w *wire) record(m jsonrpc.Message) {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		panic(err)
	}
	w.mu.Lock()
	w.n += len(b)
	if !w.countOnly {
		w.msgs = append(w.msgs, b)
	}
	w.mu.Unlock()
}

// all returns the recorded messages.
func (w *wire) all() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][]byte(nil), w.msgs...)
}

// size returns the bytes recorded in both directions.
func (w *wire) size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// capture is a Transport recording its connection's messages.
type capture struct {
	mcp.Transport
	w *wire
}

func (c capture) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &capturedConn{Connection: conn, w: c.w}, nil
}

type capturedConn struct {
	mcp.Connection
	w *wire
}

func (c *capturedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		c.w.record(m)
	}
	return m, err
}

func (c *capturedConn) Write(ctx context.Context, m jsonrpc.Message) error {
	c.w.record(m)
	return c.Connection.Write(ctx, m)
}

// rig is a client connected through a proxy to an in-process upstream.
type rig struct {
	up     *upstream
	proxy  *Proxy
	cs     *mcp.ClientSession
	wire   *wire
	done   chan error // Run's result
	upSess *mcp.ServerSession
}

// rigOptions tune newRig.
type rigOptions struct {
	client   *mcp.ClientOptions
	up       *upstream
	protocol string // "" means the SDK's newest
}

// newRig connects a client to p, which wraps a fresh upstream.
func newRig(t *testing.T, p *Proxy, o *rigOptions) *rig {
	t.Helper()
	if o == nil {
		o = &rigOptions{}
	}
	ctx := context.Background()
	r := &rig{up: o.up, proxy: p, wire: &wire{}, done: make(chan error, 1)}
	if r.up == nil {
		r.up = newUpstream()
	}
	srvT, upT := mcp.NewInMemoryTransports()
	var err error
	if r.upSess, err = r.up.srv.Connect(ctx, keepConn{srvT, r.up}, nil); err != nil {
		t.Fatal(err)
	}
	proxyT, clientT := mcp.NewInMemoryTransports()
	go func() { r.done <- p.Run(ctx, upT, proxyT) }()
	cl := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, o.client)
	if r.cs, err = cl.Connect(ctx, capture{clientT, r.wire}, &mcp.ClientSessionOptions{ProtocolVersion: o.protocol}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.cs.Close()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("proxy did not stop after the client closed")
		}
		if r.up.release != nil {
			r.up.stop()
		}
		_ = r.upSess.Close()
	})
	return r
}

// call calls a tool and fails the test on a protocol error.
func (r *rig) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// texts returns the text of every text block of res.
func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

// linkOf returns the one resource_link of res.
func linkOf(t *testing.T, res *mcp.CallToolResult) *mcp.ResourceLink {
	t.Helper()
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			if link != nil {
				t.Fatalf("more than one resource_link: %s", dump(res))
			}
			link = l
		}
	}
	if link == nil {
		t.Fatalf("no resource_link: %s", dump(res))
	}
	return link
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 600 {
		b = append(b[:600], "…"...)
	}
	return string(b)
}

// readAll pages through ref with read_artifact and returns the body.
func (r *rig) readAll(t *testing.T, ref string, page int) []byte {
	t.Helper()
	var body bytes.Buffer
	for off := 0; ; off += page {
		res := r.call(t, "read_artifact", map[string]any{"reference": ref, "offset": off, "length": page})
		if res.IsError {
			t.Fatalf("read at %d: %s", off, dump(res))
		}
		b := blockBytes(t, res)
		body.Write(b)
		if len(b) < page {
			return body.Bytes()
		}
	}
}

// blockBytes returns the bytes of a resolved read: text, or a blob.
func blockBytes(t *testing.T, res *mcp.CallToolResult) []byte {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want one block: %s", dump(res))
	}
	switch c := res.Content[0].(type) {
	case *mcp.TextContent:
		return []byte(c.Text)
	case *mcp.EmbeddedResource:
		return c.Resource.Blob
	}
	t.Fatalf("unexpected block %T", res.Content[0])
	return nil
}
