package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// TestNoPrivateDataOnTheWire drives every path, including storage failures
// whose error text names the workspace, and checks the captured JSON-RPC
// messages: no owner field and no workspace path anywhere, and the body only
// in the responses of explicit reads.
func TestNoPrivateDataOnTheWire(t *testing.T) {
	const secret = "BODY-SECRET-"
	wsPath := filepath.Join(t.TempDir(), "ws-PATHMARK")
	var failWrites, failReads atomic.Bool
	storageErr := errors.New("open " + wsPath + "/sha256/x: input/output error")
	mem := memstore.New()
	inst := drivertest.Instrument(mem, mem, &drivertest.Hooks{
		NewWriter: func(context.Context) error {
			if failWrites.Load() {
				return storageErr
			}
			return nil
		},
		GetRecord: func(context.Context, artifact.Owner, artifact.Ref) error {
			if failReads.Load() {
				return storageErr
			}
			return nil
		},
	})
	store := workspace.New(inst, inst)
	o := artifact.Owner{User: "user-MARK-u", Workflow: "flow-MARK-w", Session: "sess-MARK-s"}

	up := newUpstream()
	up.srv.AddTool(&mcp.Tool{Name: "secret", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ N int }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return textResult(strings.Repeat(secret+string(rune('a'+a.N)), 400)), nil
	})
	// A second, directory workspace whose path carries a marker: a proxy on it
	// must not leak the path either.
	dirStore, err := backend.Open(context.Background(), wsPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dirStore.Close()
	for _, st := range []*workspace.Store{store, dirStore} {
		r := newRig(t, proxyFor(t, st, o, nil), &rigOptions{up: up})
		ctx := context.Background()
		ref := linkOf(t, r.call(t, "secret", map[string]any{"n": 0})).URI
		r.call(t, "read_artifact", map[string]any{"reference": ref, "length": 100})
		r.call(t, "read_artifact", map[string]any{"reference": ref})                           // over budget
		r.call(t, "read_artifact", map[string]any{"reference": "artifact://sha256/" + secret}) // invalid
		r.call(t, "read_artifact", map[string]any{"reference": artifact.RefOf([]byte("z")).String()})
		r.call(t, "read_artifact", map[string]any{"bogus": true})
		_, _ = r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: ref})
		_, _ = r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "no-such-tool"})
		if st == store {
			failWrites.Store(true)
			if got := texts(r.call(t, "secret", map[string]any{"n": 1})); !strings.HasPrefix(got[0], "hybridctx: failed (workspace_write_failed)") {
				t.Fatalf("write failure: %q", got)
			}
			failWrites.Store(false)
			failReads.Store(true)
			if got := r.call(t, "read_artifact", map[string]any{"reference": ref, "length": 10}); !got.IsError {
				t.Fatal("read succeeded with a failing store")
			}
			if _, err := r.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: ref}); err == nil {
				t.Fatal("resources/read succeeded with a failing store")
			}
			failReads.Store(false)
		}
		checkWire(t, r.wire, secret, []string{"MARK", "PATHMARK", wsPath})
	}
}

// checkWire fails if any message holds a forbidden string, or holds body
// bytes without being the response to a read.
func checkWire(t *testing.T, w *wire, body string, forbidden []string) {
	t.Helper()
	reads := map[string]bool{}
	sawBody := false
	for _, m := range w.all() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if err := json.Unmarshal(m, &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Method == "resources/read" || msg.Method == "tools/call" && msg.Params.Name == "read_artifact" {
			reads[string(msg.ID)] = true
		}
		for _, f := range forbidden {
			if strings.Contains(string(m), f) {
				t.Errorf("message holds %q: %.300s", f, m)
			}
		}
		if strings.Contains(string(m), body) && msg.Method == "" {
			if !reads[string(msg.ID)] {
				t.Errorf("body bytes outside a read response: %.300s", m)
			}
			sawBody = true
		}
	}
	if !sawBody {
		t.Error("no read returned the body: the check proves nothing")
	}
}

func TestReporterInContextWins(t *testing.T) {
	ev, own := &events{}, &events{}
	store := openStore(t, "mem://")
	bind, _ := hybridctx.NewBinding(owner("s1"), store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: 4}, nil)
	b := &bound.Bounder{Off: off, Reporter: ev.reporter()}
	ctx := hybridctx.WithReporter(context.Background(), own.reporter())
	if _, err := b.Wire(ctx, hybridctx.Call{Tool: "t", ID: "1"}, json.RawMessage(`{"content":[{"type":"text","text":"hello world"}]}`)); err != nil {
		t.Fatal(err)
	}
	if len(own.all) != 1 || len(ev.all) != 0 {
		t.Fatalf("context reporter got %d, option reporter %d events", len(own.all), len(ev.all))
	}
}
