package loop_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/agent/internal/agenttest"
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
