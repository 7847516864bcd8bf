// Command hybridctx offloads large tool results to a workspace, rehydrates
// references on request, and lists and verifies the workspace. See
// "hybridctx --help"; the work is done by package internal/cli.
package main

import (
	"context"
	"os"

	"github.com/hybridctx/hybridctx/internal/cli"
)

func main() {
	// The first SIGINT or SIGTERM cancels the command, which undoes what it
	// had begun and exits 128+the signal number; a second one exits at once.
	sig := cli.NotifySignals(context.Background(), os.Exit)
	env := cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Signals: sig}
	code := cli.Main(sig.Context(), os.Args[1:], env)
	// The watch stays on until the exit: a signal that comes after the
	// decision must not end the process by its default action, with the
	// output complete but the exit status of a killed process.
	os.Exit(code)
}
