package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOffloadJSONShapeKeysOnlyInTheNotice: the keys of a JSON body are
// content. `offload --json` shows them in the notice, the model's text,
// and nowhere else: not in the diagnostics, the other fields, or the
// --events stream.
func TestOffloadJSONShapeKeysOnlyInTheNotice(t *testing.T) {
	const key = "MARKER-KEY"
	ws := newWorkspace(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	body := []byte(`{"` + key + `": [` + strings.Repeat(`{"id": 1, "v": "x"}, `, 200) + `null]}`)
	r := withInput(t, body, host(ws, "--json", "--events", events, "offload", "--threshold", "100")...)
	wantCode(t, r, 0)
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	var notice string
	if err := json.Unmarshal(m["notice"], &notice); err != nil || !strings.Contains(notice, `shape: {"`+key+`": array[201] of {"id": number, "v": string}}`) {
		t.Fatalf("notice %q, %v", notice, err)
	}
	delete(m, "notice")
	rest, _ := json.Marshal(m)
	if strings.Contains(string(rest), key) || strings.Contains(r.stderr, key) {
		t.Errorf("the key outside the notice: %s %s", rest, r.stderr)
	}
	ev, err := os.ReadFile(events)
	if err != nil || len(ev) == 0 || strings.Contains(string(ev), key) {
		t.Errorf("events: %s, %v", ev, err)
	}
}
