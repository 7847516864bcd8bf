package ui

import (
	"bytes"
	"context"
	"testing"
)

// FuzzEventsFile: any file reads without error; every non-blank line is
// either a decision of a run, a compaction step of a run, a run summary or
// a bad line, counted once; every run's detail renders.
func FuzzEventsFile(f *testing.F) {
	good := `{"type":"offload_decision","sequence":1,"time":"2026-01-02T03:04:05.000000006Z","run_id":"r1","agent_id":"a","parent_agent_id":null,"depth":0,"diagnostics":{"operation":"offload","outcome":"inline","content":"tool_result","reason":"below_threshold","observed_bytes":12,"configured_bytes":256,"reference":null,"attribution":{"input_bytes":12,"output_bytes":12}}}`
	f.Add([]byte(good + "\n" + good + "\nnot json\n\n"))
	f.Add([]byte(`{"type":"run_summary","run_id":"r1","history":{"compactions":1}}` + "\n" + good))
	step := `{"type":"history_compaction","sequence":2,"time":"2026-01-02T03:04:05.000000007Z","run_id":"r1","agent_id":"a","parent_agent_id":null,"depth":0,"compaction":{"stepped":true,"results_masked":2,"inputs_masked":0,"failed":0,"before":{"bytes":6547,"tokens":1638},"after":{"bytes":2931,"tokens":733},"invalidates_cached_prefix":true,"over_budget":false,"shortfall":null}}`
	f.Add([]byte(good + "\n" + step + "\n" + step + "\n"))
	f.Add([]byte(step + "\n"))
	f.Add(bytes.Repeat([]byte("x"), MaxEventLine+2))
	f.Add(bytes.Repeat([]byte(" "), MaxEventLine+1))
	f.Add(append(bytes.Repeat([]byte("y"), MaxEventLine), '\n'))
	f.Fuzz(func(t *testing.T, file []byte) {
		v := &eventsView{runs: map[string]*run{}}
		if err := v.read(context.Background(), bytes.NewReader(file)); err != nil {
			t.Fatal(err)
		}
		v.finish()
		var lines, decisions, steps int64
		for _, l := range bytes.Split(file, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 || len(l) > MaxEventLine {
				lines++
			}
		}
		for _, r := range v.runs {
			decisions += int64(len(r.decisions))
			steps += int64(len(r.steps))
			d := r.detail()
			for _, s := range d.Steps {
				if s.At < -1 || s.At >= len(r.decisions) {
					t.Fatalf("step placed at %d of %d decisions", s.At, len(r.decisions))
				}
			}
		}
		if v.Lines != lines || decisions+steps+v.Bad > lines || int64(len(v.BadLines)) > min(v.Bad, maxBadLines) {
			t.Fatalf("lines %d (want %d), decisions %d, bad %d", v.Lines, lines, decisions, v.Bad)
		}
		if len(v.order) != len(v.runs) {
			t.Fatal("a run is missing from the order")
		}
	})
}
