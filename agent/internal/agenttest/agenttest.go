// Package agenttest holds what the tests of package agent and of the
// reference loop share: one binding over an instrumented memory workspace
// with everything built for it, an event recorder, and reproducible text.
package agenttest

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// Owner is the owner of NewEnv's binding.
var Owner = artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}

// Env is one binding over an instrumented memory workspace, with the
// offloader, rehydrator, middleware and read tool built for it.
type Env struct {
	Inst  *drivertest.Instrumented
	Store *workspace.Store
	Bind  *hybridctx.Binding
	Off   *hybridctx.Offloader
	Reh   *hybridctx.Rehydrator
	MW    *agent.Middleware
	Read  *agent.ReadTool
}

// NewEnv returns an Env of Owner over a fresh instrumented memory
// workspace, with the given inline threshold and read budget cap.
func NewEnv(t testing.TB, threshold, budgetCap int64) *Env {
	t.Helper()
	mem := memstore.New()
	inst := drivertest.Instrument(mem, mem, nil)
	return NewEnvOn(t, inst, workspace.New(inst, inst), Owner, threshold, budgetCap)
}

// NewEnvOn returns an Env of owner over store.
func NewEnvOn(t testing.TB, inst *drivertest.Instrumented, store *workspace.Store, owner artifact.Owner, threshold, budgetCap int64) *Env {
	t.Helper()
	e := &Env{Inst: inst, Store: store}
	var err error
	if e.Bind, err = hybridctx.NewBinding(owner, store); err != nil {
		t.Fatal(err)
	}
	if e.Off, err = hybridctx.NewOffloader(e.Bind, hybridctx.Policy{InlineThreshold: threshold}, nil); err != nil {
		t.Fatal(err)
	}
	if e.Reh, err = hybridctx.NewRehydrator(e.Bind, nil); err != nil {
		t.Fatal(err)
	}
	if e.MW, err = agent.NewMiddleware(e.Off); err != nil {
		t.Fatal(err)
	}
	if e.Read, err = agent.NewReadTool(e.Reh, &agent.ReadToolOptions{BudgetCap: budgetCap}); err != nil {
		t.Fatal(err)
	}
	return e
}

// Recorder is a sink keeping every event.
type Recorder struct {
	mu     sync.Mutex
	events []*hybridctx.Event
}

// Emit keeps e.
func (r *Recorder) Emit(_ context.Context, e *hybridctx.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

// All returns the events kept so far.
func (r *Recorder) All() []*hybridctx.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*hybridctx.Event(nil), r.events...)
}

// Reporting returns a context with a root reporter of agentID feeding sinks
// and a new Recorder.
func Reporting(agentID string, sinks ...hybridctx.Sink) (context.Context, *Recorder) {
	rec := &Recorder{}
	r := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "run-1", AgentID: agentID, Sinks: append(sinks, rec)})
	return hybridctx.WithReporter(context.Background(), r), rec
}

// Text returns n reproducible bytes of log-like text for seed.
func Text(n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	b.Grow(n + 64)
	for line := 0; b.Len() < n; line++ {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(line))
		b.WriteString(" value=")
		b.WriteString(strconv.FormatUint(r.Uint64(), 36))
		b.WriteByte('\n')
	}
	return b.String()[:n]
}

// Stored offloads body through e and returns its reference text.
func Stored(t testing.TB, e *Env, body string) string {
	t.Helper()
	out, err := e.Off.Offload(context.Background(), hybridctx.Call{Tool: "t", ID: "c"}, body)
	if err != nil || out.Ref.IsZero() {
		t.Fatalf("offload: %v %v", out, err)
	}
	return out.Ref.String()
}
