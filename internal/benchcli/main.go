// Package benchcli is the hybridctx-bench command line: the workload
// benchmark (bench.go), its history-budget form (history.go) and the replay
// of recorded runs (trajectories.go), measured by package internal/workload.
// It is a measuring tool and so not part of the hybridctx binary; it shares
// that binary's plumbing (exit codes, global flags, owner, workspace,
// progress events) through internal/cli's Program API.
//
// Main is the only entry point; like internal/cli it reads the environment
// only through cli.Env, so tests run it in process.
package benchcli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx/internal/cli"
)

// Name is the program's name, the prefix of its error lines.
const Name = "hybridctx-bench"

// exits are the exit codes hybridctx-bench can return.
var exits = []int{cli.ExitOK, cli.ExitInternal, cli.ExitUsage, cli.ExitInterrupted, cli.ExitTerminated}

// Main runs hybridctx-bench with args (without the program name) and
// returns the process exit code.
func Main(ctx context.Context, args []string, env cli.Env) int {
	return cli.RunProgram(ctx, args, env, cli.Program{
		Name:  Name,
		Exits: exits,
		Command: func(x *cli.App) *cobra.Command {
			return (&app{x}).benchCommand()
		},
	})
}

// app is one invocation of hybridctx-bench.
type app struct {
	*cli.App
}
