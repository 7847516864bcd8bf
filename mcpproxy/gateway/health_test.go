package gateway

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
)

// A client that gives up on a call cancels it on the server that runs it,
// and only there: the other server goes on serving.
func TestGatewayCancelReachesTheServer(t *testing.T) {
	a := &goServer{name: "a", waiting: make(chan struct{}, 1), cancelled: make(chan struct{}, 1)}
	b := &goServer{name: "b"}
	f := newFixture(t, twoServers, a, b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.client.CallTool(ctx, &mcp.CallToolParams{Name: "a__wait", Arguments: map[string]any{}})
		done <- err
	}()
	select {
	case <-a.waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("the call never reached server a")
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	select {
	case <-a.cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("server a's call was not cancelled: notifications/cancelled did not reach it")
	}
	if r := f.call(t, "b__big", map[string]any{"n": 3}); r.IsError || text(r) != "xxx" {
		t.Fatalf("b after a's cancellation: %+v", r)
	}
	if r := f.call(t, "a__big", map[string]any{"n": 2}); r.IsError || text(r) != "xx" {
		t.Fatalf("a after its cancellation: %+v", r)
	}
}

// A server that stops answering (its process alive, its pipe silent) fails
// its keep-alive ping: the gateway withdraws its tools, answers calls to it
// at once, and starts it again after the backoff, while the other server
// serves throughout.
func TestGatewayRestartsAServerThatHangs(t *testing.T) {
	store, err := backend.Open(context.Background(), "mem://", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	a, b := &goServer{name: "a"}, &goServer{name: "b"}
	f := &fixture{servers: map[string]*goServer{"a": a, "b": b}, clock: &fakeClock{ch: make(chan time.Time)}, store: store,
		events: &recorder{}, changed: make(chan struct{}, 100), keepAlive: 4 * time.Second}
	var first atomic.Pointer[hangConn]
	f.start(t, store, artifact.Owner{User: "u", Workflow: "gateway", Session: "s"}, twoServers, func(s *Server) (mcp.Transport, error) {
		tr, err := f.servers[s.Name].transport()
		if err != nil || s.Name != "a" {
			return tr, err
		}
		return &hangTransport{Transport: tr, made: &first}, nil
	})
	if r := f.call(t, "a__big", map[string]any{"n": 2}); text(r) != "xx" {
		t.Fatalf("a before it hangs: %+v", r)
	}
	first.Load().hang.Store(true)
	waitFor(t, func() bool { return !strings.Contains(strings.Join(f.toolNames(t), ","), "a__big") })
	if r := f.call(t, "b__big", map[string]any{"n": 3}); r.IsError || text(r) != "xxx" {
		t.Fatalf("b while a hangs: %+v", r)
	}
	if r := f.call(t, "a__big", map[string]any{"n": 3}); !r.IsError || !strings.Contains(text(r), "not running") {
		t.Fatalf("a while down: %q", text(r))
	}
	// Release the backoff (any server's: on a loaded machine b may miss a
	// ping too) until a's tools are back.
	waitFor(t, func() bool {
		select {
		case f.clock.ch <- time.Time{}:
		default:
		}
		return strings.Contains(strings.Join(f.toolNames(t), ","), "a__big")
	})
	if r := f.call(t, "a__big", map[string]any{"n": 2}); text(r) != "xx" {
		t.Fatalf("a after its restart: %+v", r)
	}
}

// hangTransport's first connection can be told to hang: from then on it
// drops every message the server sends, as a server that stopped reading
// and writing would look to the gateway.
type hangTransport struct {
	mcp.Transport
	made *atomic.Pointer[hangConn]
}

func (t *hangTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	hc := &hangConn{Connection: c}
	t.made.CompareAndSwap(nil, hc)
	return hc, nil
}

type hangConn struct {
	mcp.Connection
	hang atomic.Bool
}

func (c *hangConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil || !c.hang.Load() {
			return m, err
		}
	}
}
