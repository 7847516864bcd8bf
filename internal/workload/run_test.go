package workload

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/drivertest"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// items is a Source over a slice.
type items []Item

func (s *items) Next() (Item, error) {
	if len(*s) == 0 {
		return Item{}, io.EOF
	}
	it := (*s)[0]
	*s = (*s)[1:]
	return it, nil
}

func memWorkspace() (*workspace.Store, *memstore.Store) {
	m := memstore.New()
	return workspace.New(m, m), m
}

func TestRunKnownWorkload(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789\n"), 1000) // 11,000 bytes
	other := bytes.Repeat([]byte{0xff, 0}, 3000)      // binary, 6,000 bytes
	src := items{
		{Session: "a", Tool: "grep", CallID: "1", Content: []byte("small")},
		{Session: "a", Tool: "grep", CallID: "2", Content: big},
		{Session: "b", Tool: "grep", CallID: "3", Content: big},       // another owner: offloaded
		{Session: "a", Tool: "http_get", CallID: "4", Content: big},   // same owner: existing
		{Session: "a", Tool: "download", CallID: "5", Content: other}, // a third tool, mid-run
		{Session: "b", Tool: "grep", CallID: "", Content: []byte{}},
	}
	store, _ := memWorkspace()
	var events atomic.Int64
	rep, err := Run(context.Background(), &src, store, &RunOptions{
		Threshold: 4096, ConversationLen: 2, // several conversations per session
		Sinks: []hybridctx.Sink{hybridctx.SinkFunc(func(context.Context, *hybridctx.Event) error { events.Add(1); return nil })},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"inline": 2, "offloaded": 3, "existing_reference": 1}
	for k, v := range want {
		if rep.Decisions[k] != v {
			t.Errorf("decisions %v, want %v", rep.Decisions, want)
			break
		}
	}
	total := int64(5 + 3*len(big) + len(other))
	switch {
	case rep.Results != 6 || rep.Sessions != 2 || rep.ResultBytes != total:
		t.Errorf("results %d sessions %d bytes %d", rep.Results, rep.Sessions, rep.ResultBytes)
	case rep.Storage.UniqueBodies != 2 || rep.Storage.UniqueBodyBytes != int64(len(big)+len(other)):
		t.Errorf("storage %+v", rep.Storage)
	case rep.Storage.BytesOffloaded != int64(3*len(big)+len(other)) || rep.Storage.StoredBytes != rep.Storage.UniqueBodyBytes:
		t.Errorf("storage %+v", rep.Storage)
	case !rep.RoundTrip.OK || rep.RoundTrip.Checked != 6: // a: 2 bodies, b: 1; whole and ranged each
		t.Errorf("round trip %+v", rep.RoundTrip)
	case rep.Rehydration.Outcomes["resolved"] != 6 || rep.Rehydration.Whole.Count != 3 || rep.Rehydration.Ranged.Count != 3:
		t.Errorf("rehydration %+v", rep.Rehydration)
	case rep.DecisionLatency.Count != 6 || rep.DecisionLatencyByOutcome["offloaded"].Count != 3:
		t.Errorf("latency %+v %+v", rep.DecisionLatency, rep.DecisionLatencyByOutcome)
	case events.Load() != 6+3+3+3:
		// 6 results, 3 ranged reads and their recovered segments inlined,
		// 3 whole reads.
		t.Errorf("%d events reached the extra sink, want 15", events.Load())
	case rep.History.WithoutOffload < total || rep.History.Ratio <= 0 || rep.History.Ratio > 0.2:
		t.Errorf("history %+v", rep.History)
	case rep.HistoryWithReads.Bytes <= rep.History.Bytes || rep.HistoryWithReads.InvariantErrors != 0:
		t.Errorf("history with reads %+v (history %+v)", rep.HistoryWithReads, rep.History)
	}
}

func TestRunGeneratedRoundTrips(t *testing.T) {
	g, err := Generate(small(3, 120))
	if err != nil {
		t.Fatal(err)
	}
	store, _ := memWorkspace()
	rep, err := Run(context.Background(), g, store, &RunOptions{Threshold: 1024})
	if err != nil {
		t.Fatal(err)
	}
	stored := rep.Decisions["offloaded"] + rep.Decisions["existing_reference"]
	if rep.Results != 120 || rep.Decisions["inline"]+stored != 120 || stored == 0 || !rep.RoundTrip.OK {
		t.Fatalf("report: %+v", rep)
	}
	if p := rep.DecisionLatency; !(p.P50 <= p.P95 && p.P95 <= p.P99 && p.P99 <= p.Max) {
		t.Fatalf("percentiles out of order: %+v", p)
	}
}

func TestRunCountsMismatches(t *testing.T) {
	m := memstore.New()
	var corrupt atomic.Bool
	h := &drivertest.Hooks{Open: func(_ context.Context, key string) error {
		if corrupt.Load() {
			drivertest.Overwrite(m, key, bytes.Repeat([]byte("x"), 9000))
		}
		return nil
	}}
	in := drivertest.Instrument(m, m, h)
	store := workspace.New(in, in)
	src := items{{Session: "a", Tool: "t", Content: bytes.Repeat([]byte("y"), 9000)}}
	var sink hybridctx.SinkFunc = func(_ context.Context, e *hybridctx.Event) error {
		if e.Type == hybridctx.OffloadDecision {
			corrupt.Store(true) // every read from now on finds the body changed
		}
		return nil
	}
	rep, err := Run(context.Background(), &src, store, &RunOptions{Sinks: []hybridctx.Sink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RoundTrip.OK || rep.RoundTrip.Mismatched != 2 || rep.Rehydration.Outcomes["stale"] != 2 {
		t.Fatalf("a corrupted body: round trip %+v, rehydrations %v", rep.RoundTrip, rep.Rehydration.Outcomes)
	}
}

type failingSource struct{ err error }

func (f failingSource) Next() (Item, error) { return Item{}, f.err }

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	store, _ := memWorkspace()
	boom := errors.New("source broke")
	cases := []struct {
		name string
		src  Source
		opts *RunOptions
		want error
	}{
		{"read tool name", &items{{Session: "a", Tool: hybridctx.DefaultReadToolName}}, nil, ErrField},
		{"invalid item", &items{{Session: "a", Tool: "no spaces"}}, nil, ErrField},
		{"bad user", &items{}, &RunOptions{User: "  "}, ErrField},
		{"source error", failingSource{boom}, nil, boom},
		{"bad line", NewReader(strings.NewReader("nope\n"), nil), nil, ErrSyntax},
		{"nil source", nil, nil, ErrRun},
	}
	for _, tc := range cases {
		if _, err := Run(ctx, tc.src, store, tc.opts); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := Run(ctx, &items{}, nil, nil); !errors.Is(err, ErrRun) {
		t.Errorf("nil store: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	src := items{{Session: "a", Tool: "t", Content: []byte("x")}}
	if _, err := Run(cctx, &src, store, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	// A workspace that fails: the run completes, the decisions fail.
	failing := drivertest.Instrument(memstore.New(), memstore.New(), &drivertest.Hooks{
		NewWriter: func(context.Context) error { return errors.New("disk full") }})
	src = items{{Session: "a", Tool: "t", Content: bytes.Repeat([]byte("z"), 5000)}}
	rep, err := Run(ctx, &src, workspace.New(failing, failing), nil)
	if err != nil || rep.Decisions["failed"] != 1 || !rep.RoundTrip.OK || rep.RoundTrip.Checked != 0 {
		t.Errorf("a failing workspace: %+v, %v", rep, err)
	}
}

func TestLatencyOf(t *testing.T) {
	if l := latencyOf(nil); l != (Latency{}) {
		t.Fatalf("latencyOf(nil) = %+v", l)
	}
}

// countingSource counts the items taken from it and fails after its items
// when err is set.
type countingSource struct {
	items
	taken atomic.Int64
	err   error
}

func (c *countingSource) Next() (Item, error) {
	if len(c.items) == 0 && c.err != nil {
		return Item{}, c.err
	}
	it, err := c.items.Next()
	if err == nil {
		c.taken.Add(1)
	}
	return it, err
}

func TestRunReadsAheadOfTheClock(t *testing.T) {
	ctx := context.Background()
	mk := func() *countingSource {
		c := &countingSource{}
		for range 10 {
			c.items = append(c.items, Item{Session: "a", Tool: "t", Content: bytes.Repeat([]byte("r"), 100)})
		}
		return c
	}
	for _, tc := range []struct {
		ahead int64
		want  int64 // items taken when the clock first reads
	}{
		{0, 10},   // the default reads the whole workload
		{250, 3},  // up to 250 bytes: the third item reaches it
		{-1, 0},   // nothing ahead
		{1e6, 10}, // more than there is
	} {
		src := mk()
		taken := int64(-1)
		now := func() time.Time {
			if taken < 0 {
				taken = src.taken.Load()
			}
			return time.Now()
		}
		store, _ := memWorkspace()
		rep, err := Run(ctx, src, store, &RunOptions{Threshold: 64, ReadAhead: tc.ahead, Now: now})
		if err != nil || rep.Results != 10 || rep.Decisions["offloaded"]+rep.Decisions["existing_reference"] != 10 {
			t.Fatalf("ReadAhead %d: %+v, %v", tc.ahead, rep, err)
		}
		if taken != tc.want {
			t.Errorf("ReadAhead %d: %d items taken before the clock, want %d", tc.ahead, taken, tc.want)
		}
	}
	// An error met while reading ahead is still the run's error, met
	// after the items before it.
	boom := errors.New("source broke")
	src := mk()
	src.err = boom
	store, _ := memWorkspace()
	if _, err := Run(ctx, src, store, nil); !errors.Is(err, boom) {
		t.Fatalf("source error after read-ahead: %v", err)
	}
	if src.taken.Load() != 10 {
		t.Errorf("%d items taken before the error, want 10", src.taken.Load())
	}
}
