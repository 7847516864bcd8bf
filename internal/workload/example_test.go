package workload_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/hybridctx/hybridctx/internal/workload"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/memstore"
)

// Replay a small JSON Lines workload through the agent loop and read the
// measurements.
func ExampleRun() {
	lines := `{"session": "s1", "tool": "grep", "call_id": "c1", "content": "main.go:12: TODO"}
{"session": "s1", "tool": "run_tests", "call_id": "c2", "content": "` + strings.Repeat("ok  ", 2000) + `"}
{"session": "s2", "tool": "download", "call_id": "c3", "content_base64": "/9j/4AAQSkZJRg=="}
`
	m := memstore.New()
	rep, err := workload.Run(context.Background(), workload.NewReader(strings.NewReader(lines), nil),
		workspace.New(m, m), &workload.RunOptions{Threshold: 4096})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("results:", rep.Results, "sessions:", rep.Sessions)
	fmt.Println("inline:", rep.Decisions["inline"], "offloaded:", rep.Decisions["offloaded"])
	fmt.Println("round trip ok:", rep.RoundTrip.OK, "history under 10%:", rep.History.Ratio < 0.10)
	// Output:
	// results: 3 sessions: 2
	// inline: 2 offloaded: 1
	// round trip ok: true history under 10%: true
}

// Write the first results of a small generated workload as JSON Lines.
func ExampleGenerate() {
	g, err := workload.Generate(&workload.GenerateOptions{Seed: 1, Count: 2, MedianBytes: 40, MaxBytes: 40})
	if err != nil {
		fmt.Println(err)
		return
	}
	w := workload.NewWriter(os.Stdout)
	for {
		it, err := g.Next()
		if err != nil {
			break
		}
		_ = w.Write(it)
	}
	// Output:
	// {"session":"session-1","tool":"run_tests","call_id":"call_0","content":"2026-11-30T08:51:54.356Z ERROR internal/"}
	// {"session":"session-2","tool":"http_get","call_id":"call_1","content":"\"22ibrqegxq7eo20sclbxhamz038qvysaw8zdn6\""}
}
