package workload_test

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/internal/workload"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

type items []workload.Item

func (s *items) Next() (workload.Item, error) {
	if len(*s) == 0 {
		return workload.Item{}, io.EOF
	}
	it := (*s)[0]
	*s = (*s)[1:]
	return it, nil
}

// TestRunHistoryCacheModel checks the cache model's arithmetic on three
// small results: each call sends the whole history, and with nothing
// changed, everything the previous call sent is read from the cache.
func TestRunHistoryCacheModel(t *testing.T) {
	mem := memstore.New()
	src := &items{
		{Session: "a", Tool: "t", Content: []byte(strings.Repeat("x", 100))},
		{Session: "b", Tool: "t", Content: []byte("another session")},
		{Session: "a", Tool: "t", Content: []byte(strings.Repeat("y", 100))},
	}
	rep, err := workload.RunHistory(context.Background(), src, workspace.New(mem, mem), workload.HistoryOptions{Turns: 3})
	if err != nil {
		t.Fatal(err)
	}
	off := rep.Strategies[1]
	// Turns use the session's two results, then the first again.
	call := int64(len("t") + len("call_0") + 64)
	var sent, want float64
	prev := float64(1024)
	want, sent = 1.25*1024, 1024
	for range 3 {
		now := prev + float64(call) + 100
		want += 0.1*prev + 1.25*(now-prev)
		sent += now
		prev = now
	}
	if off.Name != workload.StrategyOffload || float64(off.InputBytes) != sent || math.Abs(off.CacheWeighted-want) > 1e-6 || off.Invalidations != 0 {
		t.Fatalf("offload %+v, want input %v, weighted %v", off, sent, want)
	}
	if _, err := workload.RunHistory(context.Background(), &items{}, workspace.New(mem, mem), workload.HistoryOptions{}); !errors.Is(err, workload.ErrEmptySession) {
		t.Fatal(err)
	}
}
