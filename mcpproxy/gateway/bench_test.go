package gateway

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/mcpproxy"
)

const fiveServers = `{"mcpServers": {"s1": {"command": "x"}, "s2": {"command": "x"}, "s3": {"command": "x"}, "s4": {"command": "x"}, "s5": {"command": "x"}}}`

// TestFiguresToolsList measures tools/list for five servers of 12 tools
// each: through one gateway, and through five proxies (each listing its
// server's tools and its own three read tools), as the client receives
// them. The gateway lists 3 read tools instead of 15.
func TestFiguresToolsList(t *testing.T) {
	servers := []*goServer{{name: "s1", many: 10}, {name: "s2", many: 10}, {name: "s3", many: 10}, {name: "s4", many: 10}, {name: "s5", many: 10}}
	f := newFixture(t, fiveServers, servers...)
	res, err := f.client.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	gw, _ := json.Marshal(res)
	// Five single proxies: each its server's tools plus the read tools.
	store, _ := backend.Open(context.Background(), "mem://", nil)
	defer store.Close()
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, store)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	total, tools := 0, 0
	for _, s := range servers {
		cliT, err := s.transport()
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), cliT, nil)
		if err != nil {
			t.Fatal(err)
		}
		up, _ := cs.ListTools(context.Background(), nil)
		_ = cs.Close()
		srv := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
		if err := mcpproxy.AddReadTools(srv, reh, nil); err != nil {
			t.Fatal(err)
		}
		st, ct := mcp.NewInMemoryTransports()
		go func() { _ = srv.Run(context.Background(), st) }()
		pcs, _ := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
		rt, _ := pcs.ListTools(context.Background(), nil)
		_ = pcs.Close()
		all := &mcp.ListToolsResult{Tools: append(up.Tools, rt.Tools...)}
		b, _ := json.Marshal(all)
		total += len(b)
		tools += len(all.Tools)
	}
	t.Logf("tools/list: one gateway %d tools, %d bytes; five proxies %d tools, %d bytes", len(res.Tools), len(gw), tools, total)
	if len(res.Tools) != tools-12 {
		t.Errorf("gateway lists %d tools, want %d (12 read tools fewer)", len(res.Tools), tools-12)
	}
}

// BenchmarkGatewayCall measures one small tools/call through the gateway
// (in-memory transports both sides); BenchmarkDirectCall the same call to
// the server itself. The difference is the gateway's added latency;
// p50/p99 are reported as metrics.
func BenchmarkGatewayCall(b *testing.B) {
	f := newBenchFixture(b)
	benchCalls(b, func() error {
		_, err := f.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "s1__big", Arguments: map[string]any{"n": 100}})
		return err
	})
}

func BenchmarkDirectCall(b *testing.B) {
	s := &goServer{name: "s1"}
	cliT, _ := s.transport()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), cliT, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	benchCalls(b, func() error {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"n": 100}})
		return err
	})
}

// BenchmarkProxyCall is the same call through one mcpproxy.Proxy wrapping
// the server alone: what a client had before the gateway, one proxy per
// server.
func BenchmarkProxyCall(b *testing.B) {
	store, err := backend.Open(context.Background(), "mem://", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	p, err := mcpproxy.NewProxy(off, reh, nil)
	if err != nil {
		b.Fatal(err)
	}
	up, _ := (&goServer{name: "s1"}).transport()
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = p.Run(context.Background(), up, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	benchCalls(b, func() error {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"n": 100}})
		return err
	})
}

func benchCalls(b *testing.B, call func() error) {
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func newBenchFixture(b *testing.B) *fixture {
	b.Helper()
	store, err := backend.Open(context.Background(), "mem://", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	servers := map[string]*goServer{}
	for _, n := range []string{"s1", "s2", "s3", "s4", "s5"} {
		servers[n] = &goServer{name: n}
	}
	cfg, _ := Parse([]byte(fiveServers), nil)
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	reh, _ := hybridctx.NewRehydrator(bind, nil)
	gw, err := New(cfg, off, reh, &Options{KeepAlive: -1, Transport: func(s *Server) (mcp.Transport, error) { return servers[s.Name].transport() }})
	if err != nil {
		b.Fatal(err)
	}
	if err := gw.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = gw.Close() })
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = gw.Run(context.Background(), st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return &fixture{gw: gw, client: cs}
}
