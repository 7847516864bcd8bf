package agent_test

import (
	"context"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent/internal/agenttest"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
)

// Shared with the loop's tests (package agenttest).
type env = agenttest.Env

var testOwner = agenttest.Owner

func newEnv(t testing.TB, threshold, budgetCap int64) *env {
	return agenttest.NewEnv(t, threshold, budgetCap)
}

func reporting(agentID string, sinks ...hybridctx.Sink) (context.Context, *agenttest.Recorder) {
	return agenttest.Reporting(agentID, sinks...)
}

func text(n int, seed uint64) string { return agenttest.Text(n, seed) }

func stored(t *testing.T, e *env, body string) string { return agenttest.Stored(t, e, body) }

func newEnvOn(t testing.TB, inst *drivertest.Instrumented, store *workspace.Store, owner artifact.Owner, threshold, budgetCap int64) *env {
	return agenttest.NewEnvOn(t, inst, store, owner, threshold, budgetCap)
}
