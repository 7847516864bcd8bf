package workload

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// trajectoryLine renders tr in the replay format, with keys the reader
// ignores (source, meta) as recorded runs carry them.
func trajectoryLine(t testing.TB, tr *Trajectory) string {
	t.Helper()
	turns := make([]map[string]any, len(tr.Turns))
	for i, u := range tr.Turns {
		turns[i] = map[string]any{"tool": u.Tool, "call_id": u.CallID, "output": u.Output,
			"pre_bytes": u.PreBytes, "assistant_bytes": u.AssistantBytes, "calls": u.Calls}
	}
	b, err := json.Marshal(map[string]any{"set": tr.Set, "id": tr.ID, "agent": "a", "source": map[string]string{"repo": "r"},
		"prompt_bytes": tr.PromptBytes, "turns": turns, "final_pre_bytes": tr.FinalPreBytes,
		"final_calls": tr.FinalCalls, "final_assistant_bytes": tr.FinalAssistantBytes, "meta": map[string]any{"reward": 1}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gzipped(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readAllTrajectories(t testing.TB, data []byte) ([]*Trajectory, error) {
	t.Helper()
	r, err := NewTrajectoryReader(bytes.NewReader(data), nil)
	if err != nil {
		return nil, err
	}
	var out []*Trajectory
	for {
		tr, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, tr)
	}
}

func TestTrajectoryReaderPlainAndGzip(t *testing.T) {
	want := []*Trajectory{
		{Set: "s", ID: "one", PromptBytes: 6000, Turns: []TrajectoryTurn{
			{Tool: "bash", CallID: "c1", Output: "a\nb", PreBytes: 0, AssistantBytes: 140, Calls: 1},
			{Tool: "./rock", CallID: "", Output: "", PreBytes: 12, AssistantBytes: 0, Calls: 0},
		}, FinalPreBytes: 40, FinalCalls: 2, FinalAssistantBytes: 600},
		{Set: "s", ID: "two", PromptBytes: 1, Turns: []TrajectoryTurn{}},
	}
	text := trajectoryLine(t, want[0]) + "\r\n\n" + trajectoryLine(t, want[1])
	for name, data := range map[string][]byte{"plain": []byte(text), "gzip": gzipped(t, text)} {
		got, err := readAllTrajectories(t, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: read\n%s\nwant\n%s", name, a, b)
		}
	}
}

func TestTrajectoryReaderErrors(t *testing.T) {
	good := `{"prompt_bytes":1,"turns":[{"tool":"t","output":"x","calls":1}]}`
	for _, tc := range []struct {
		name, line string
		want       error
		fragment   string
	}{
		{"not JSON", `{"prompt_bytes":`, ErrSyntax, "incomplete"},
		{"two values", good + ` {}`, ErrSyntax, "more than one"},
		{"invalid UTF-8", "{\"prompt_bytes\":1,\"turns\":[],\"set\":\"\xff\"}", ErrSyntax, "UTF-8"},
		{"wrong type", `{"prompt_bytes":"9","turns":[]}`, ErrSyntax, "prompt_bytes"},
		{"no turns", `{"prompt_bytes":1}`, ErrField, "turns"},
		{"no prompt", `{"turns":[]}`, ErrField, "prompt_bytes"},
		{"negative size", `{"prompt_bytes":-1,"turns":[]}`, ErrField, ">= 0"},
		{"negative calls", `{"prompt_bytes":1,"turns":[],"final_calls":-2}`, ErrField, ">= 0"},
		{"turn without output", `{"prompt_bytes":1,"turns":[{"tool":"t","calls":1}]}`, ErrField, "turn 0"},
		{"turn without calls", `{"prompt_bytes":1,"turns":[{"tool":"t","output":""}]}`, ErrField, "turn 0"},
		{"empty tool", `{"prompt_bytes":1,"turns":[{"tool":"","output":"","calls":1}]}`, ErrField, "tool"},
		{"negative pre", `{"prompt_bytes":1,"turns":[{"tool":"t","output":"","calls":1,"pre_bytes":-4}]}`, ErrField, "turn 0"},
		{"long call id", `{"prompt_bytes":1,"turns":[{"tool":"t","call_id":"` + strings.Repeat("c", MaxCallIDLen+1) + `","output":"","calls":1}]}`, ErrField, "call_id"},
	} {
		got, err := readAllTrajectories(t, []byte(good+"\n"+tc.line+"\n"+good))
		var le *LineError
		if !errors.Is(err, tc.want) || !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), tc.fragment) || len(got) != 1 {
			t.Errorf("%s: %d read, %v", tc.name, len(got), err)
		}
	}
	// A line over the bound, and a damaged gzip stream.
	r, err := NewTrajectoryReader(strings.NewReader(good+"\n"+good), &TrajectoryReaderOptions{MaxLineBytes: 16})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("long line: %v", err)
	}
	z := gzipped(t, good+"\n"+good+"\n")
	if _, err := readAllTrajectories(t, z[:len(z)-12]); !errors.Is(err, ErrSyntax) {
		t.Errorf("cut gzip stream: %v", err)
	}
	if _, err := NewTrajectoryReader(bytes.NewReader([]byte{0x1f, 0x8b, 0}), nil); !errors.Is(err, ErrSyntax) {
		t.Errorf("bad gzip header: %v", err)
	}
}

// FuzzReadTrajectories feeds arbitrary bytes, plain and gzipped, to the
// trajectory reader: no panic, every error a *LineError (or ErrSyntax for
// a gzip header) wrapping the format's sentinels, every trajectory's sizes
// and counts non-negative.
func FuzzReadTrajectories(f *testing.F) {
	f.Add([]byte(`{"prompt_bytes":10,"turns":[{"tool":"bash","call_id":"c","output":"ok","pre_bytes":1,"assistant_bytes":2,"calls":1}],"final_calls":1}`), false)
	f.Add([]byte(`{"prompt_bytes":10,"turns":[]}`+"\n\n"+`{"prompt_bytes":0,"turns":[{"tool":"./x","output":"","calls":0}]}`), true)
	f.Add([]byte(`{"prompt_bytes":1e3,"turns":null}`), false)
	f.Add([]byte(`{"prompt_bytes":1,"turns":[{"tool":"t","output":"\ud800","calls":1}]}`), true)
	f.Fuzz(func(t *testing.T, data []byte, zip bool) {
		if zip {
			data = gzipped(t, string(data))
		}
		r, err := NewTrajectoryReader(bytes.NewReader(data), &TrajectoryReaderOptions{MaxLineBytes: 1 << 12})
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("reader: %v", err)
			}
			return
		}
		for {
			tr, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) || !(errors.Is(err, ErrSyntax) || errors.Is(err, ErrField) || errors.Is(err, ErrLineTooLong)) {
					t.Fatalf("error of an unexpected kind: %v (%T)", err, err)
				}
				if _, again := r.Next(); again != err {
					t.Fatalf("Next after an error: %v, want the same error", again)
				}
				return
			}
			if tr.PromptBytes < 0 || tr.FinalCalls < 0 || tr.FinalPreBytes < 0 || tr.FinalAssistantBytes < 0 {
				t.Fatalf("negative figure in %+v", tr)
			}
			for _, u := range tr.Turns {
				if u.Tool == "" || u.Calls < 0 || u.PreBytes < 0 || u.AssistantBytes < 0 {
					t.Fatalf("bad turn %+v", u)
				}
			}
		}
	})
}
