package hybridctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const parseRef = "artifact://sha256/33cb5e7b5f1f6bb0f3c34c3e1ae5c4a4be2d14a1e0ae1e1fbd0d0c9b53c7e0a1"

// parseSamples are one event per kind of decision, as a reporter writes them.
func parseSamples(t testing.TB) [][]byte {
	mk := func(d *Diagnostics, err error) *Diagnostics {
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	parent := "root"
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	var out [][]byte
	for i, d := range []*Diagnostics{
		mk(newOffloadDiagnostics(Offloaded, ThresholdExceeded, 4000, 256, parseRef)),
		mk(newOffloadDiagnostics(Inline, BelowThreshold, 12, 256, "")),
		mk(newOffloadDiagnostics(Inline, RecoveredSegmentBypass, 300, 256, "")),
		mk(newOffloadDiagnostics(Failed, ExceedsMaxArtifactSize, 9000, 256, "")),
		mk(newOffloadDiagnostics(ExistingReference, HistoryBudget, 700, 256, parseRef)),
		mk(newRehydrationDiagnostics(ViewSearch, Resolved, DigestVerified, 977, 4096, parseRef, 0)),
		mk(newRehydrationDiagnostics(ViewRange, Unauthorized, OwnerMismatch, -1, 4096, parseRef, 0)),
		mk(newRehydrationDiagnostics(ViewLines, InvalidReference, MalformedReference, -1, 4096, "", 7)),
		mk(newRehydrationDiagnostics(ViewQuery, ViewFailed, FilterError, 0, 4096, parseRef, 0)),
	} {
		e := &Event{Type: OffloadDecision, Sequence: uint64(i + 1), Time: at, RunID: "r1", AgentID: "hybridctx", Diagnostics: d}
		if d.op == OpRehydration {
			e.Type = RehydrationDecision
		}
		if i%2 == 1 {
			e.AgentID, e.ParentAgentID, e.Depth = "sub", &parent, 1
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	for i, s := range compactionSamples() {
		e := &Event{Type: HistoryCompaction, Sequence: uint64(100 + i), Time: at, RunID: "r1", AgentID: "sub",
			ParentAgentID: &parent, Depth: 1, Compaction: s}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// compactionSamples are one step of each kind Compact reports.
func compactionSamples() []*CompactionStep {
	var out []*CompactionStep
	for _, c := range []Compaction{
		{Stepped: true, Masked: 3, Before: HistorySize{Bytes: 11000, Tokens: 2750}, After: HistorySize{Bytes: 4300, Tokens: 1080}},
		{Stepped: true, Masked: 1, InputsMasked: 2, Failed: 1, Before: HistorySize{Bytes: 9000, Tokens: 2300, InputBytes: 5000, InputTokens: 1250},
			After: HistorySize{Bytes: 3000, Tokens: 800, InputBytes: 400, InputTokens: 100}, OverBudget: true, Shortfall: ShortOffloadFailed},
		{Stepped: true, Before: HistorySize{Bytes: 900, Tokens: 230}, After: HistorySize{Bytes: 900, Tokens: 230}, OverBudget: true, Shortfall: ShortMasks},
		{InputsMasked: 1, Before: HistorySize{Bytes: 7000, Tokens: 1750, InputBytes: 6990, InputTokens: 1748},
			After: HistorySize{Bytes: 200, Tokens: 52, InputBytes: 190, InputTokens: 50}},
	} {
		out = append(out, newCompactionStep(&c))
	}
	return out
}

func TestParseEventRoundTrip(t *testing.T) {
	for _, line := range parseSamples(t) {
		e, err := ParseEvent(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		again, _ := json.Marshal(e)
		if !bytes.Equal(again, line) {
			t.Errorf("round trip:\n got %s\nwant %s", again, line)
		}
	}
}

func TestParseEventRefuses(t *testing.T) {
	good := string(parseSamples(t)[0])
	for name, line := range map[string]string{
		"not json":         "{",
		"two values":       good + good,
		"unknown field":    strings.Replace(good, `"depth"`, `"owner":"x","depth"`, 1),
		"missing field":    strings.Replace(good, `"run_id":"r1",`, "", 1),
		"bad time":         strings.Replace(good, ".000000006Z", ".6Z", 1),
		"zero sequence":    strings.Replace(good, `"sequence":1`, `"sequence":0`, 1),
		"parent at root":   strings.Replace(good, `"parent_agent_id":null`, `"parent_agent_id":"x"`, 1),
		"wrong type":       strings.Replace(good, "offload_decision", "rehydration_decision", 1),
		"unknown outcome":  strings.Replace(good, `"offloaded"`, `"kept"`, 1),
		"invalid pair":     strings.Replace(good, "threshold_exceeded", "digest_verified", 1),
		"attribution lies": strings.Replace(good, `"output_bytes":82`, `"output_bytes":83`, 1),
		"content lies":     strings.Replace(good, "tool_result", "recovered_context", 1),
		"no reference":     strings.Replace(good, `"reference":"`+parseRef+`"`, `"reference":null`, 1),
		"bad reference":    strings.Replace(good, parseRef, parseRef[:40], 1),
		"view on offload":  strings.Replace(good, `}}`, `},"view":"lines"}`, 1),
		"enum out of byte": strings.Replace(good, `"offload"`, `"operation(300)"`, 1),
	} {
		if line == good {
			t.Fatalf("%s: the case changed nothing", name)
		}
		if _, err := ParseEvent([]byte(line)); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("%s: err = %v, want ErrInvalidEvent", name, err)
		}
	}
}

func TestParseCompactionEventRefuses(t *testing.T) {
	samples := parseSamples(t)
	good := string(samples[len(samples)-3]) // the over-budget step with inputs
	for name, line := range map[string]string{
		"wrong type":              strings.Replace(good, "history_compaction", "offload_decision", 1),
		"unknown type":            strings.Replace(good, "history_compaction", "history_compacted", 1),
		"both bodies":             strings.Replace(good, `"compaction":`, `"diagnostics":{"operation":"offload"},"compaction":`, 1),
		"unknown field":           strings.Replace(good, `"stepped"`, `"tool":"x","stepped"`, 1),
		"missing field":           strings.Replace(good, `"failed":1,`, "", 1),
		"missing size":            strings.Replace(good, `"bytes":9000,`, "", 1),
		"negative counter":        strings.Replace(good, `"results_masked":1`, `"results_masked":-1`, 1),
		"negative size":           strings.Replace(good, `"bytes":3000`, `"bytes":-3000`, 1),
		"inputs over content":     strings.Replace(good, `"input_bytes":400`, `"input_bytes":4000`, 1),
		"invalidation lies":       strings.Replace(good, `"invalidates_cached_prefix":true`, `"invalidates_cached_prefix":false`, 1),
		"unknown shortfall":       strings.Replace(good, `"offload_failed"`, `"too_big"`, 1),
		"shortfall within budget": strings.Replace(good, `"over_budget":true`, `"over_budget":false`, 1),
		"over budget no reason":   strings.Replace(good, `"shortfall":"offload_failed"`, `"shortfall":null`, 1),
		"failure without failed":  strings.Replace(good, `"failed":1`, `"failed":0`, 1),
		"nothing happened":        strings.Replace(strings.Replace(string(samples[len(samples)-1]), `"inputs_masked":1`, `"inputs_masked":0`, 1), `"invalidates_cached_prefix":true`, `"invalidates_cached_prefix":false`, 1),
		"masks without a step":    strings.Replace(good, `"stepped":true`, `"stepped":false`, 1),
		"size moved, no mask":     strings.Replace(string(samples[len(samples)-2]), `"after":{"bytes":900`, `"after":{"bytes":800`, 1),
		"number as text":          strings.Replace(good, `"results_masked":1`, `"results_masked":"1"`, 1),
	} {
		if line == good || !strings.Contains(line, "compaction") {
			t.Fatalf("%s: the case changed nothing", name)
		}
		if _, err := ParseEvent([]byte(line)); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("%s: err = %v, want ErrInvalidEvent", name, err)
		}
	}
}

// FuzzParseEvent: a line ParseEvent accepts renders back to an event it
// parses to the same rendering, and an error never quotes the line.
func FuzzParseEvent(f *testing.F) {
	for _, s := range parseSamples(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseEvent(line)
		if err != nil {
			if !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("error does not wrap ErrInvalidEvent: %v", err)
			}
			return
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		e2, err := ParseEvent(b)
		if err != nil {
			t.Fatalf("rendering of a parsed event does not parse: %v\n%s", err, b)
		}
		b2, _ := json.Marshal(e2)
		if !bytes.Equal(b, b2) {
			t.Fatalf("not stable:\n%s\n%s", b, b2)
		}
	})
}
