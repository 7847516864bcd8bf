// Command hybridctx offloads large tool results to a workspace, rehydrates
// references on request, and lists and verifies the workspace. See
// "hybridctx --help"; the work is done by package internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hybridctx/hybridctx/internal/cli"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal cancels the command, which undoes what it had
		// begun and exits 128+the signal number; a second one exits at once.
		s := (<-sigs).(syscall.Signal)
		cancel(&cli.SignalError{Signal: s})
		s = (<-sigs).(syscall.Signal)
		os.Exit(128 + int(s))
	}()
	code := cli.Main(ctx, os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	signal.Stop(sigs)
	os.Exit(code)
}
