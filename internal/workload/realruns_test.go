package workload

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

func memStore(t testing.TB) *workspace.Store {
	t.Helper()
	m := memstore.New()
	s := workspace.New(m, m)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A replay prices each span as the format says: all but the last of its
// calls on the history as it stands, the last after the span's other text.
func TestTrajectorySpansArePriced(t *testing.T) {
	tr := &Trajectory{PromptBytes: 400, Turns: []TrajectoryTurn{
		{Tool: "t", Output: strings.Repeat("x", 200), AssistantBytes: 100, Calls: 1},
		{Tool: "t", Output: strings.Repeat("y", 40), PreBytes: 60, AssistantBytes: 20, Calls: 2},
	}, FinalPreBytes: 8, FinalCalls: 1, FinalAssistantBytes: 1000}
	rs, err := replayTrajectory(context.Background(), memStore(t), historyDefaults(HistoryOptions{}), "run-1", tr)
	if err != nil {
		t.Fatal(err)
	}
	// Four calls: [400] all new; turn 1's first on [400 100 200], the
	// prompt cached; its second after its other text, [400 100 200 60];
	// the final one after the last output and the final text,
	// [400 100 200 60 20 40 8].
	want := 1.25*400 +
		0.1*400 + 1.25*300 +
		0.1*700 + 1.25*60 +
		0.1*760 + 1.25*(20+40+8)
	for _, r := range rs {
		if math.Abs(r.s.CacheWeighted-want) > 1e-9 || r.s.InputBytes != 400+700+760+828 || r.s.PeakBytes != 828 || r.s.PeakToolBytes != 240 {
			t.Errorf("%s: %+v, want cache-weighted %v", r.name, r.s, want)
		}
	}
}

// genTrajectories makes n runs whose outputs grow with the run's index, so
// the later runs go over the budget and the earlier ones do not.
func genTrajectories(t testing.TB, n int) []byte {
	var b bytes.Buffer
	for i := range n {
		tr := &Trajectory{Set: "gen", ID: fmt.Sprint(i), PromptBytes: 2000, FinalCalls: 1}
		for k := range 12 + 2*i {
			size := 300 + (k*977+i*131)%(800*(i+1))
			out := strings.Repeat(fmt.Sprintf("line %d of output %d\n", k, i), size/20+1)
			tr.Turns = append(tr.Turns, TrajectoryTurn{Tool: "bash", CallID: "call_1", Output: out,
				PreBytes: int64(k % 3 * 50), AssistantBytes: int64(100 + k%5*400), Calls: 1 + k%4/3})
		}
		b.WriteString(trajectoryLine(t, tr) + "\n")
	}
	return b.Bytes()
}

func TestRunTrajectories(t *testing.T) {
	r, err := NewTrajectoryReader(bytes.NewReader(gzipped(t, string(genTrajectories(t, 8)))), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunTrajectories(context.Background(), r, memStore(t), HistoryOptions{Budget: 8192, LowWater: 4096, Threshold: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Trajectories != 8 || rep.Outputs != 8*12+2*28 || len(rep.Strategies) != len(strategies) {
		t.Fatalf("report %+v", rep)
	}
	by := map[string]*RealStrategy{}
	for i, s := range rep.Strategies {
		if s.Name != strategies[i] {
			t.Fatalf("strategy %d is %s", i, s.Name)
		}
		by[s.Name] = s
	}
	off, inl, w, c := by[StrategyOffload], by[StrategyInline], by[StrategyWatermark], by[StrategyClearTrigger]
	switch {
	case off.Cost != (Spread{1, 1, 1}) || off.Acted != 0 || off.Masked != 0:
		t.Errorf("offload %+v", off)
	case inl.Cost.P50 <= 1 || inl.PeakToolBytes.Max <= off.PeakToolBytes.Max:
		t.Errorf("inline %+v", inl)
	case w.Acted == 0 || w.Acted == rep.Trajectories || w.Masked == 0 || w.ReadBackExact != w.Masked:
		t.Errorf("watermark acted on %d of %d runs, %d masked, %d read back", w.Acted, rep.Trajectories, w.Masked, w.ReadBackExact)
	case w.PeakToolBytes.Max > 8192 || w.ActedCost.P50 == 0 || w.ActedCost.P90 < w.ActedCost.P50:
		t.Errorf("watermark %+v", w)
	case c.Lossless || c.ReadBackExact != 0 || c.Acted == 0:
		t.Errorf("clear_at_trigger %+v", c)
	}
	if _, err := RunTrajectories(context.Background(), &sliceTrajectories{}, memStore(t), HistoryOptions{}); err != ErrEmptySession {
		t.Errorf("no trajectory: %v", err)
	}
}

type sliceTrajectories struct{ trs []*Trajectory }

func (s *sliceTrajectories) Next() (*Trajectory, error) {
	if len(s.trs) == 0 {
		return nil, io.EOF
	}
	tr := s.trs[0]
	s.trs = s.trs[1:]
	return tr, nil
}

func TestSpread(t *testing.T) {
	if got := spread(nil); got != (Spread{}) {
		t.Errorf("empty: %+v", got)
	}
	v := []float64{5, 1, 4, 2, 3, 9, 8, 7, 6, 10}
	if got := spread(v); got != (Spread{P50: 5, P90: 9, Max: 10}) {
		t.Errorf("spread %+v", got)
	}
	if v[0] != 5 {
		t.Error("spread sorted its argument")
	}
}
