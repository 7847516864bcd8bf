package agent_test

import (
	"context"
	"encoding/json"
	"math"
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

var testOwner = artifact.Owner{User: "ada", Workflow: "triage", Session: "s1"}

// env is one binding over an instrumented memory workspace, with the
// offloader, rehydrator, middleware and read tool built for it.
type env struct {
	inst  *drivertest.Instrumented
	store *workspace.Store
	bind  *hybridctx.Binding
	off   *hybridctx.Offloader
	reh   *hybridctx.Rehydrator
	mw    *agent.Middleware
	read  *agent.ReadTool
}

func newEnv(t testing.TB, threshold, budgetCap int64) *env {
	t.Helper()
	mem := memstore.New()
	inst := drivertest.Instrument(mem, mem, nil)
	return newEnvOn(t, inst, workspace.New(inst, inst), testOwner, threshold, budgetCap)
}

func newEnvOn(t testing.TB, inst *drivertest.Instrumented, store *workspace.Store, owner artifact.Owner, threshold, budgetCap int64) *env {
	t.Helper()
	e := &env{inst: inst, store: store}
	var err error
	if e.bind, err = hybridctx.NewBinding(owner, store); err != nil {
		t.Fatal(err)
	}
	if e.off, err = hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: threshold}, nil); err != nil {
		t.Fatal(err)
	}
	if e.reh, err = hybridctx.NewRehydrator(e.bind, nil); err != nil {
		t.Fatal(err)
	}
	if e.mw, err = agent.NewMiddleware(e.off); err != nil {
		t.Fatal(err)
	}
	if e.read, err = agent.NewReadTool(e.reh, &agent.ReadToolOptions{BudgetCap: budgetCap}); err != nil {
		t.Fatal(err)
	}
	return e
}

// recorder is a sink keeping every event.
type recorder struct {
	mu     sync.Mutex
	events []*hybridctx.Event
}

func (r *recorder) Emit(_ context.Context, e *hybridctx.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) all() []*hybridctx.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*hybridctx.Event(nil), r.events...)
}

// reporting returns a context with a root reporter feeding a new recorder.
func reporting(agentID string, sinks ...hybridctx.Sink) (context.Context, *recorder) {
	rec := &recorder{}
	r := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "run-1", AgentID: agentID, Sinks: append(sinks, rec)})
	return hybridctx.WithReporter(context.Background(), r), rec
}

// text returns n reproducible bytes of log-like text for seed.
func text(n int, seed uint64) string {
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

// fetchTool returns {"size": n, "seed": s} → text(n, s).
func fetchTool() agent.Tool {
	return agent.Tool{
		Spec: agent.ToolSpec{Name: "fetch", Description: "fetch a log", Parameters: json.RawMessage(`{"type":"object"}`)},
		Func: func(_ context.Context, args json.RawMessage) (any, error) {
			var a struct {
				Size int    `json:"size"`
				Seed uint64 `json:"seed"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			return text(a.Size, a.Seed), nil
		},
	}
}

func fetchArgs(size int, seed uint64) json.RawMessage {
	return json.RawMessage(`{"size":` + strconv.Itoa(size) + `,"seed":` + strconv.FormatUint(seed, 10) + `}`)
}

// logNormalSizes returns n reproducible sizes, log-normal around median.
func logNormalSizes(n int, median, sigma float64, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 11))
	out := make([]int, n)
	for i := range out {
		out[i] = max(1, int(median*math.Exp(sigma*r.NormFloat64())))
	}
	return out
}
