package mcpproxy

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// viewsRig is a proxy whose upstream also has a JSON tool and a tool named
// search_artifact that must never be called (the proxy serves that name).
func viewsRig(t *testing.T, ev *events) (*rig, *drivertest.Instrumented, *atomic.Int32, *workspace.Store) {
	t.Helper()
	mem := memstore.New()
	inst := drivertest.Instrument(mem, mem, nil)
	up := newUpstream()
	var shadowCalls atomic.Int32
	up.srv.AddTool(&mcp.Tool{Name: "jobs", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(`{"jobs":[` + strings.Repeat(`{"name":"build","ok":true},`, 60) + `{"name":"deploy","ok":false}]}`), nil
	})
	up.srv.AddTool(&mcp.Tool{Name: "search_artifact", InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		shadowCalls.Add(1)
		return textResult("upstream answer"), nil
	})
	store := workspace.New(inst, inst)
	return newRig(t, proxyFor(t, store, owner("s1"), ev), &rigOptions{up: up}), inst, &shadowCalls, store
}

func (e *events) snapshot() []*hybridctx.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*hybridctx.Event(nil), e.all...)
}

func TestProxySearchQueryLines(t *testing.T) {
	ev := &events{}
	r, inst, shadow, store := viewsRig(t, ev)
	body := text(10000) // "line 000000 of a long tool result\n"...
	ref := linkOf(t, r.call(t, "large", map[string]any{"size": 10000})).URI
	tools, err := r.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tl := range tools.Tools {
		if tl.Name == "search_artifact" {
			n++
			if !strings.Contains(tl.Description, "grep -n") {
				t.Fatalf("the upstream's search_artifact was listed: %s", dump(tl))
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d search_artifact tools listed", n)
	}

	decisions := func() int { return len(ev.snapshot()) }
	before := decisions()
	got := r.call(t, "search_artifact", map[string]any{"reference": ref, "pattern": "line 000123 "})
	if got.IsError || texts(got)[0] != "124:line 000123 of a long tool result\n1 match (showing 1-1)\n" ||
		got.Meta[MetaView] != "search" || got.Meta[MetaTotal] != float64(1) || decisions() != before+1 {
		t.Fatalf("search: %s", dump(got))
	}
	if shadow.Load() != 0 {
		t.Fatal("the call was forwarded upstream")
	}
	got = r.call(t, "search_artifact", map[string]any{"reference": ref, "pattern": `line 0001\d\d`, "regex": true, "max_matches": 2})
	if got.IsError || !strings.HasSuffix(texts(got)[0], "100 matches (showing 1-2); continue with skip 2\n") || got.Meta[MetaNext] != float64(2) {
		t.Fatalf("paged search: %s", dump(got))
	}
	got = r.call(t, "search_artifact", map[string]any{"reference": ref, "pattern": "absent"})
	if got.IsError || texts(got)[0] != "0 matches (showing none)\n" {
		t.Fatalf("zero: %s", dump(got))
	}
	got = r.call(t, "search_artifact", map[string]any{"reference": ref, "pattern": "line", "max_bytes": 20})
	if !got.IsError || !strings.HasPrefix(texts(got)[0], "hybridctx: over_budget (budget_exceeded): the first match") {
		t.Fatalf("over budget: %s", dump(got))
	}
	before = decisions()
	got = r.call(t, "search_artifact", map[string]any{"reference": ref, "pattern": "(", "regex": true})
	if !got.IsError || texts(got)[0] != "hybridctx: search_artifact: invalid arguments: the pattern is not a valid RE2 regular expression" || decisions() != before {
		t.Fatalf("malformed: %s", dump(got))
	}

	// Lines: exact bytes, and a note block where the budget stopped them.
	got = r.call(t, "read_artifact", map[string]any{"reference": ref, "start_line": 3, "line_count": 2})
	if got.IsError || len(got.Content) != 1 || texts(got)[0] != body[68:136] || got.Meta[MetaOffset] != float64(68) {
		t.Fatalf("lines: %s", dump(got))
	}
	got = r.call(t, "read_artifact", map[string]any{"reference": ref, "start_line": 1, "max_bytes": 100})
	if got.IsError || len(got.Content) != 2 || texts(got)[0] != body[:68] || !strings.Contains(texts(got)[1], "continue with start_line 3") || got.Meta[MetaNext] != float64(3) {
		t.Fatalf("paged lines: %s", dump(got))
	}
	got = r.call(t, "read_artifact", map[string]any{"reference": ref, "start_line": 1, "offset": 4})
	if !got.IsError || !strings.Contains(texts(got)[0], "cannot be combined") {
		t.Fatalf("mixed: %s", dump(got))
	}

	// Query over a JSON result, and over text.
	jobs := linkOf(t, r.call(t, "jobs", nil)).URI
	got = r.call(t, "query_artifact", map[string]any{"reference": jobs, "filter": `.jobs[] | select(.ok | not) | .name`})
	if got.IsError || texts(got)[0] != "\"deploy\"\n1 result (showing 1-1)\n" || got.Meta[MetaView] != "query" {
		t.Fatalf("query: %s", dump(got))
	}
	for filter, want := range map[string]string{".": "hybridctx: view_failed (not_json)", "$ENV": "hybridctx: query_artifact: invalid arguments: the environment is not available"} {
		got = r.call(t, "query_artifact", map[string]any{"reference": ref, "filter": filter})
		if !got.IsError || !strings.HasPrefix(texts(got)[0], want) {
			t.Fatalf("%s: %s", filter, dump(got))
		}
	}
	got = r.call(t, "query_artifact", map[string]any{"reference": jobs, "filter": ".jobs.name"})
	if !got.IsError || !strings.HasPrefix(texts(got)[0], "hybridctx: view_failed (filter_error)") {
		t.Fatalf("filter error: %s", dump(got))
	}

	checkForeignLikeNever(t, r, store)

	// Tampered: stale, no match released.
	parsed, _ := artifact.ParseRef(ref)
	if !inst.Tamper(parsed.Hex(), []byte(strings.Replace(body, "000123", "999999", 1))) {
		t.Fatal("tamper")
	}
	got = r.call(t, "search_artifact", map[string]any{"reference": ref, "pattern": "line"})
	if !got.IsError || !strings.HasPrefix(texts(got)[0], "hybridctx: stale (digest_mismatch)") || strings.Contains(dump(got), "of a long") {
		t.Fatalf("stale: %s", dump(got))
	}
	for _, e := range ev.snapshot() {
		if e.Diagnostics.Operation() == hybridctx.OpRehydration && e.Diagnostics.View() == 0 {
			t.Fatal("a rehydration event without its view")
		}
	}
}

// checkForeignLikeNever: a reference minted for another session and one
// never offloaded get the same answer from search and query, byte for byte.
func checkForeignLikeNever(t *testing.T, r *rig, store *workspace.Store) {
	t.Helper()
	never := artifact.RefOf([]byte("never stored anywhere")).String()
	bindB, _ := hybridctx.NewBinding(owner("s2"), store)
	offB, _ := hybridctx.NewOffloader(bindB, hybridctx.Policy{InlineThreshold: 1}, nil)
	theirs, _ := offB.Offload(context.Background(), hybridctx.Call{Tool: "t", ID: "c"}, `["another session's"]`)
	for _, c := range [][2]string{{"search_artifact", never}, {"query_artifact", never}, {"search_artifact", theirs.Ref.String()}, {"query_artifact", theirs.Ref.String()}} {
		name := c[0]
		args := map[string]any{"reference": c[1], "pattern": "x", "filter": "."}
		if name == "search_artifact" {
			delete(args, "filter")
		} else {
			delete(args, "pattern")
		}
		got := r.call(t, name, args)
		if !got.IsError || texts(got)[0] != "hybridctx: unauthorized (owner_mismatch): no artifact with this reference belongs to this conversation." {
			t.Fatalf("%s unauthorized: %s", name, dump(got))
		}
	}

}
