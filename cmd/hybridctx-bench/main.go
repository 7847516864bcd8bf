// Command hybridctx-bench replays a seeded or recorded workload through the
// agent loop and prints what it measured as JSON (or, with --history
// --markdown, the tables of BENCHMARKS.md). See "hybridctx-bench --help";
// the work is done by package internal/benchcli.
package main

import (
	"context"
	"os"

	"github.com/hybridctx/hybridctx/internal/benchcli"
	"github.com/hybridctx/hybridctx/internal/cli"
)

func main() {
	// As hybridctx: the first SIGINT or SIGTERM cancels the run, which exits
	// 128+the signal number; a second one exits at once.
	sig := cli.NotifySignals(context.Background(), os.Exit)
	env := cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Signals: sig}
	os.Exit(benchcli.Main(sig.Context(), os.Args[1:], env))
}
