package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/internal/workload"
)

func TestBenchHistory(t *testing.T) {
	r := run(t, "bench", "--history", "--count", "120", "--turns", "80", "--history-budget", "8192", "--low-water", "4096",
		"--keep-recent", "2", "--workspace", "mem://")
	wantCode(t, r, ExitOK)
	var out benchHistoryJSON
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&out); err != nil || dec.More() || out.History == nil {
		t.Fatalf("bench --history output: %v\n%.400q", err, r.stdout)
	}
	h := out.History
	names := []string{workload.StrategyInline, workload.StrategyOffload, workload.StrategyMaskEveryTurn,
		workload.StrategyWatermark, workload.StrategyKeepLastK, workload.StrategyClearTrigger}
	if h.Turns != 80 || len(h.Strategies) != len(names) {
		t.Fatalf("report %+v", h)
	}
	by := map[string]*workload.BudgetStrategy{}
	for i, s := range h.Strategies {
		if s.Name != names[i] {
			t.Fatalf("strategy %d is %q, want %q", i, s.Name, names[i])
		}
		by[s.Name] = s
	}
	w, off, inl := by[workload.StrategyWatermark], by[workload.StrategyOffload], by[workload.StrategyInline]
	switch {
	case w.Masked == 0 || w.ReadBackExact != w.Masked || w.Questions.Count == 0 || w.Questions.Exact != w.Questions.Count:
		t.Errorf("watermark %+v", w)
	case w.PeakToolBytes >= off.PeakToolBytes || off.PeakBytes >= inl.PeakBytes || w.CacheWeighted >= off.CacheWeighted:
		t.Errorf("watermark %+v, offload %+v", w, off)
	case by[workload.StrategyKeepLastK].Lossless || by[workload.StrategyKeepLastK].ReadBackExact != 0:
		t.Errorf("keep_last_k %+v", by[workload.StrategyKeepLastK])
	case off.Invalidations != 0 || off.Masked != 0:
		t.Errorf("offload %+v", off)
	}
	// In tokens, with the estimate (the exact encodings are tested in
	// package bpe).
	r = run(t, "bench", "--history", "--count", "40", "--turns", "30", "--history-budget", "1000", "--low-water", "500",
		"--tokenizer", "bytes/4", "--workspace", "mem://")
	wantCode(t, r, ExitOK)
	if !strings.Contains(r.stdout, `"tokenizer":"bytes/4"`) || !strings.Contains(r.stdout, `"peak_tokens":`) {
		t.Errorf("tokens: %.300s", r.stdout)
	}
	// --keep-recent 0 keeps none: keep_last_k clears every result and
	// clear_at_trigger may clear up to the last one.
	r = run(t, "bench", "--history", "--count", "20", "--turns", "20", "--history-budget", "1000", "--low-water", "500",
		"--keep-recent", "0", "--workspace", "mem://")
	wantCode(t, r, ExitOK)
}

func TestBenchHistoryUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		fragment string
	}{
		{[]string{"--history", "--turns", "0"}, "--turns"},
		{[]string{"--history", "--history-budget", "0"}, "--history-budget"},
		{[]string{"--history", "--history-budget", "10", "--low-water", "11"}, "--low-water"},
		{[]string{"--history", "--keep-recent", "-1"}, "--keep-recent"},
		{[]string{"--history", "--questions"}, "--questions"},
		{[]string{"--turns", "5"}, "--turns applies to --history only"},
		{[]string{"--turns", "0"}, "--turns applies to --history only"},
		{[]string{"--questions", "--keep-recent", "1"}, "--keep-recent applies to --history only"},
		{[]string{"--history", "--tokenizer", "p50k_base"}, "--tokenizer"},
	} {
		r := run(t, append([]string{"bench"}, tc.args...)...)
		if r.code != ExitUsage {
			t.Errorf("bench %v: exit %d (stderr %q)", tc.args, r.code, r.stderr)
			continue
		}
		wantOneErrorLine(t, r, tc.fragment)
	}
}
