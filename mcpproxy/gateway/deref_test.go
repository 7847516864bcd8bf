package gateway

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

func TestGatewayDereferenceRefusals(t *testing.T) {
	b := &goServer{name: "b"}
	cfg := `{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b", "hybridctx": {"dereference": true}}}, "hybridctx": {"dereferenceBudget": 100000}}`
	f := newFixture(t, cfg, &goServer{name: "a"}, b)
	// Over the dereference budget: refused, the upstream not called.
	big := refRE.FindString(text(f.call(t, "a__big", map[string]any{"n": 200000})))
	r := f.call(t, "b__write", map[string]any{"content": big})
	if !r.IsError || !strings.Contains(text(r), "over_budget") || b.calls != 0 {
		t.Fatalf("over budget: %q, calls %d", text(r), b.calls)
	}
	// A binary body: refused unless the schema says base64.
	bind, _ := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "gateway", Session: "s"}, f.store)
	off, _ := hybridctx.NewOffloader(bind, hybridctx.Policy{InlineThreshold: testThreshold}, nil)
	bin := make([]byte, 5000)
	for i := range bin {
		bin[i] = byte(i*7 + 0x80)
	}
	out, err := off.Offload(context.Background(), hybridctx.Call{Tool: "t", ID: "1"}, bin)
	if err != nil {
		t.Fatal(err)
	}
	ref := out.Ref.String()
	r = f.call(t, "b__write", map[string]any{"content": ref})
	if !r.IsError || !strings.Contains(text(r), "unsupported_kind") || b.calls != 0 {
		t.Fatalf("binary into a string: %q, calls %d", text(r), b.calls)
	}
	r = f.call(t, "b__writeb64", map[string]any{"data": ref})
	if r.IsError || b.calls != 1 {
		t.Fatalf("binary into base64: %q", text(r))
	}
	if b.got[0] != base64.StdEncoding.EncodeToString(bin) {
		t.Errorf("base64 argument differs")
	}
	// A malformed reference-looking string is not a reference: passed as is.
	odd := "artifact://sha256/" + strings.Repeat("A", 64)
	f.call(t, "b__write", map[string]any{"content": odd})
	if b.got[1] != odd {
		t.Errorf("a non-canonical reference was replaced: %q", b.got[1])
	}
}

// TestGatewayReadyWait: Start returns after ReadyWait while a server is
// still starting; the healthy one serves meanwhile.
func TestGatewayReadyWait(t *testing.T) {
	readyWait = 50 * time.Millisecond
	defer func() { readyWait = 0 }()
	cfg := `{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}, "hybridctx": {"startTimeout": "60s"}}`
	f := newFixture(t, cfg, &goServer{name: "a", refuse: true}, &goServer{name: "b"})
	if up := f.gw.Up(); up["a"] || !up["b"] {
		t.Fatalf("up = %v", up)
	}
	f.clock.mu.Lock()
	defer f.clock.mu.Unlock()
	if len(f.clock.waits) != 0 {
		t.Fatalf("a's start already ended: %v", f.clock.waits)
	}
}
