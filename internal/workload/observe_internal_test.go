package workload

import (
	"context"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
)

// TestObserveSkipsCompactionEvents: a history_compaction event, which has
// no diagnostics, is no decision of the run and counts nothing.
func TestObserveSkipsCompactionEvents(t *testing.T) {
	r := &runner{now: time.Now}
	s := &session{r: r, pending: true}
	ctx := context.WithValue(context.Background(), sessionKey{}, s)
	ev := &hybridctx.Event{Type: hybridctx.HistoryCompaction}
	if err := r.observe(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if !s.pending || len(s.st.decisions) != 0 {
		t.Fatalf("a compaction event was taken for a decision: %+v", s.st)
	}
}
