package hybridctx_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

var (
	ownerA = artifact.Owner{User: "user-a", Workflow: "wf", Session: "sess-1"}
	ownerB = artifact.Owner{User: "user-a", Workflow: "wf", Session: "sess-2"}
	t0     = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
)

// collector is a sink that keeps every event.
type collector struct {
	mu     sync.Mutex
	events []*hybridctx.Event
}

func (c *collector) Emit(_ context.Context, e *hybridctx.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
	return nil
}

func (c *collector) all() []*hybridctx.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*hybridctx.Event(nil), c.events...)
}

// decisions returns the decision events kept (offload and rehydration).
func (c *collector) decisions() []*hybridctx.Event {
	var out []*hybridctx.Event
	for _, e := range c.all() {
		if e.Diagnostics != nil {
			out = append(out, e)
		}
	}
	return out
}

// compactions returns the history_compaction events kept.
func (c *collector) compactions() []*hybridctx.Event {
	var out []*hybridctx.Event
	for _, e := range c.all() {
		if e.Compaction != nil {
			out = append(out, e)
		}
	}
	return out
}

// env is one binding over an instrumented memory store, with a reporter.
type env struct {
	mem    *memstore.Store
	inst   *drivertest.Instrumented
	hooks  *drivertest.Hooks
	store  *workspace.Store
	bind   *hybridctx.Binding
	off    *hybridctx.Offloader
	reh    *hybridctx.Rehydrator
	events *collector
	ctx    context.Context
	clock  *fakeClock
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newEnv(t testing.TB, threshold int64) *env {
	t.Helper()
	e := &env{mem: memstore.New(), hooks: &drivertest.Hooks{}, events: &collector{}, clock: &fakeClock{t: t0}}
	e.inst = drivertest.Instrument(e.mem, e.mem, e.hooks)
	e.store = workspace.New(e.inst, e.inst)
	e.bind = e.binding(t, ownerA)
	e.off = e.offloader(t, e.bind, threshold)
	e.reh = e.rehydrator(t, e.bind)
	rep := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "run-1", AgentID: "root", Sinks: []hybridctx.Sink{e.events}})
	e.ctx = hybridctx.WithReporter(context.Background(), rep)
	return e
}

func (e *env) binding(t testing.TB, o artifact.Owner) *hybridctx.Binding {
	t.Helper()
	b, err := hybridctx.NewBinding(o, e.store)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) offloader(t testing.TB, b *hybridctx.Binding, threshold int64) *hybridctx.Offloader {
	t.Helper()
	o, err := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: threshold}, &hybridctx.OffloaderOptions{Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func (e *env) rehydrator(t testing.TB, b *hybridctx.Binding) *hybridctx.Rehydrator {
	t.Helper()
	r, err := hybridctx.NewRehydrator(b, &hybridctx.RehydratorOptions{Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustOffload(t testing.TB, o *hybridctx.Offloader, ctx context.Context, v any) *hybridctx.OffloadResult {
	t.Helper()
	out, err := o.Offload(ctx, hybridctx.Call{Tool: "tool", ID: "call"}, v)
	if err != nil {
		t.Fatalf("Offload: %v", err)
	}
	return out
}

func mustRehydrate(t testing.TB, r *hybridctx.Rehydrator, ctx context.Context, req hybridctx.Request) *hybridctx.Rehydration {
	t.Helper()
	out, err := r.Rehydrate(ctx, req)
	if err != nil {
		t.Fatalf("Rehydrate: %v", err)
	}
	return out
}

func expect(t testing.TB, gotO hybridctx.Outcome, gotR hybridctx.Reason, wantO hybridctx.Outcome, wantR hybridctx.Reason) {
	t.Helper()
	if gotO != wantO || gotR != wantR {
		t.Fatalf("got %v/%v, want %v/%v", gotO, gotR, wantO, wantR)
	}
}
