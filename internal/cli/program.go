package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/workspace"
)

// This file is the small API through which a command-line program other
// than hybridctx (cmd/hybridctx-bench, over internal/benchcli) shares this
// package's plumbing: the exit table and its error lines, the global flags,
// the owner from flags or the environment, the workspace and the progress
// reporter. Nothing here is a second definition: every function forwards
// to the one hybridctx itself uses.

// Program is a command-line program built on this package.
type Program struct {
	// Name is the program's name: the prefix of its error lines.
	Name string
	// Exits are the exit codes the program can return; its help lists
	// those rows of the exit table.
	Exits []int
	// Command builds the program's root command for one invocation. The
	// global flags (--workspace, --user, --workflow, --session, --run-id,
	// --events, --json) are added to it.
	Command func(*App) *cobra.Command
}

// RunProgram runs p with args (without the program name) as Main runs
// hybridctx, and returns the process exit code: errors are one line on
// env.Stderr prefixed with p.Name, and with --json an error of exit 1 or 2
// also prints the {"error"} object on standard output.
func RunProgram(ctx context.Context, args []string, env Env, p Program) int {
	return runProgram(ctx, args, env, p.Name, func(a *app) *cobra.Command {
		root := p.Command(&App{a: a})
		a.globalFlags(root)
		root.SilenceUsage, root.SilenceErrors = true, true
		root.Long += "\n" + exitCodesHelp(p.Exits)
		return root
	})
}

// App is one invocation of a Program: its environment and global flags.
type App struct {
	a *app
}

// Stdin is the invocation's standard input.
func (x *App) Stdin() io.Reader { return x.a.env.Stdin }

// Stdout is the invocation's standard output.
func (x *App) Stdout() io.Writer { return x.a.env.Stdout }

// Run adapts a command body as hybridctx's commands are: an error that is
// not one of this file's constructors' becomes an internal error (exit 1).
func (x *App) Run(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return x.a.run(fn)
}

// UserWorkflow returns the owner's user and workflow: --user and
// --workflow when given, else HYBRIDCTX_USER and HYBRIDCTX_WORKFLOW ("" when
// neither is set).
func (x *App) UserWorkflow(cmd *cobra.Command) (user, workflow string) {
	return x.a.setting(cmd, "user", x.a.user, EnvUser), x.a.setting(cmd, "workflow", x.a.workflow, EnvWorkflow)
}

// RunID is --run-id ("" when not given).
func (x *App) RunID() string { return x.a.runID }

// Workspace is --workspace as given ("" when not given).
func (x *App) Workspace() string { return x.a.workspace }

// OpenWorkspace opens the workspace named by --workspace, the environment
// or the default, creating it when missing; errors are hybridctx's.
func (x *App) OpenWorkspace(ctx context.Context, cmd *cobra.Command) (*workspace.Store, error) {
	return x.a.openWorkspaceAs(ctx, cmd, true)
}

// WithReporter returns ctx carrying the progress reporter --events asks for
// (ctx unchanged without --events) and a function that releases it.
func (x *App) WithReporter(ctx context.Context, cmd *cobra.Command) (context.Context, func(), error) {
	return x.a.withReporter(ctx, cmd)
}

// WriteJSON writes v as one line of JSON on standard output.
func (x *App) WriteJSON(v any) error { return x.a.writeJSON(v) }

// Write writes b on standard output.
func (x *App) Write(b []byte) error { return x.a.write(b) }

// Usagef is a usage error (exit 2) with a formatted message.
func Usagef(format string, args ...any) error { return usagef(format, args...) }

// Internal is an unexpected or storage error (exit 1): what, then the
// error's category, never its raw text; "interrupted" for a cancelled ctx.
func Internal(what string, err error) error { return internal(what, err) }

// Fail ends a command with exit 1 and msg as its error line.
func Fail(msg string) error { return &exitError{code: ExitInternal, msg: msg} }

// MaxThreshold bounds every --threshold flag, in bytes.
const MaxThreshold = maxThreshold

// TokenizerNames are the names --tokenizer takes, for help texts.
const TokenizerNames = tokenizerNames

// LookupTokenizer is the one --tokenizer lookup: nil for "", a usage error
// for an unknown name.
func LookupTokenizer(name string) (hybridctx.Tokenizer, error) { return lookupTokenizer(name) }

// RandomID returns 32 random lowercase hex digits.
func RandomID() string { return randomID() }
