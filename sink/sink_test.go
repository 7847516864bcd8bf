package sink_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/sink"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

func offloader(t *testing.T) *hybridctx.Offloader {
	t.Helper()
	m := memstore.New()
	b, err := hybridctx.NewBinding(artifact.Owner{User: "u", Workflow: "w", Session: "s"}, workspace.New(m, m))
	if err != nil {
		t.Fatal(err)
	}
	o, err := hybridctx.NewOffloader(b, hybridctx.Policy{InlineThreshold: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestChannel(t *testing.T) {
	ch := make(chan *hybridctx.Event, 1)
	var errs []error
	rep := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "r", Sinks: []hybridctx.Sink{sink.Channel{C: ch}},
		OnSinkError: func(err error) { errs = append(errs, err) }})
	ctx := hybridctx.WithReporter(context.Background(), rep)
	off := offloader(t)
	first, _ := off.Offload(ctx, hybridctx.Call{}, "one")
	if _, err := off.Offload(ctx, hybridctx.Call{}, "two"); err != nil {
		t.Fatal(err)
	}
	ev := <-ch
	if ev.Diagnostics != first.Diagnostics() || ev.Sequence != 1 {
		t.Fatalf("event %v", ev)
	}
	if len(errs) != 1 || !errors.Is(errs[0], sink.ErrFull) {
		t.Fatalf("full channel errors: %v", errs)
	}
}

func TestJSONLinesConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	const writers, each = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rep := hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: "run-" + string(rune('a'+w)), AgentID: "x",
			Sinks: []hybridctx.Sink{sink.NewJSONLines(f)}})
		ctx := hybridctx.WithReporter(context.Background(), rep)
		off := offloader(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := off.Offload(ctx, hybridctx.Call{}, strings.Repeat("z", i)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seqs := map[string]uint64{}
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev struct {
			RunID    string `json:"run_id"`
			Sequence uint64 `json:"sequence"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d is not one JSON object: %q", n, sc.Text())
		}
		if ev.Sequence != seqs[ev.RunID]+1 {
			t.Fatalf("run %s: sequence %d after %d", ev.RunID, ev.Sequence, seqs[ev.RunID])
		}
		seqs[ev.RunID] = ev.Sequence
		n++
	}
	if n != writers*each {
		t.Fatalf("%d lines, want %d", n, writers*each)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestJSONLinesWriteError(t *testing.T) {
	var got error
	rep := hybridctx.NewReporter(hybridctx.ReporterOptions{Sinks: []hybridctx.Sink{sink.NewJSONLines(failWriter{})},
		OnSinkError: func(err error) { got = err }})
	out, err := offloader(t).Offload(hybridctx.WithReporter(context.Background(), rep), hybridctx.Call{}, "x")
	if err != nil || out.Outcome() != hybridctx.Inline || got == nil {
		t.Fatalf("decision %v, err %v, sink error %v", out, err, got)
	}
}
