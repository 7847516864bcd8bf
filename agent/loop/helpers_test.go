package loop_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/agent/internal/agenttest"
)

// fetchTool returns {"size": n, "seed": s} → agenttest.Text(n, s).
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
			return agenttest.Text(a.Size, a.Seed), nil
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
