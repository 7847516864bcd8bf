// Package cli is the hybridctx command line: one file per subcommand, this
// file for the global flags and the owner, workspace and reporter set-up,
// and exit.go for the single table from outcomes and errors to exit codes.
//
// Main is the only entry point. It reads the environment only through
// Env.Getenv and writes only to Env.Stdout and Env.Stderr, so tests run it
// in process.
package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/backend"
	// The command line opens every backend this module ships.
	_ "github.com/hybridctx/hybridctx/backend/all"
	"github.com/hybridctx/hybridctx/sink"
	"github.com/hybridctx/hybridctx/workspace"
)

// Env is the process environment Main runs in.
type Env struct {
	// Stdin is where offload reads a result by default.
	Stdin io.Reader
	// Stdout receives the command's own output only.
	Stdout io.Writer
	// Stderr receives one-line errors and, with --events -, progress events.
	Stderr io.Writer
	// Getenv looks up an environment variable ("" when unset).
	Getenv func(key string) string
	// Signals, when not nil, is the signal watch whose context Main runs
	// under; offload syncs with it before taking a piped input as complete.
	Signals *Signals
}

// Environment variables read through Env.Getenv. A flag wins over its
// variable.
const (
	EnvWorkspace = "HYBRIDCTX_WORKSPACE"
	EnvUser      = "HYBRIDCTX_USER"
	EnvWorkflow  = "HYBRIDCTX_WORKFLOW"
	EnvSession   = "HYBRIDCTX_SESSION"
)

// DefaultWorkspace is the workspace used when neither --workspace nor
// HYBRIDCTX_WORKSPACE is set: a directory in the current directory.
const DefaultWorkspace = ".hybridctx"

// AgentID is the agent id of every progress event the command reports.
const AgentID = "hybridctx"

// Main runs the hybridctx command line with args (without the program name)
// and returns the process exit code. Errors are printed as one line on
// env.Stderr prefixed "hybridctx: ".
func Main(ctx context.Context, args []string, env Env) (code int) {
	return runProgram(ctx, args, env, "hybridctx", (*app).rootCommand)
}

// runProgram runs the command tree that build makes for one invocation:
// Main's, or another program's (RunProgram). name prefixes error lines.
func runProgram(ctx context.Context, args []string, env Env, name string, build func(*app) *cobra.Command) (code int) {
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintln(env.Stderr, name+": internal error: "+oneLine(fmt.Sprint(p)))
			code = ExitInternal
		}
	}()
	if args == nil {
		args = []string{} // cobra would read os.Args otherwise
	}
	a := &app{env: env}
	root := build(a)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code, msg := exitCode(err)
	if c, m, ok := signalExit(ctx, code); ok {
		code, msg, err = c, m, &exitError{code: c, msg: m, category: &catInterrupted}
	}
	if msg != "" {
		fmt.Fprintln(env.Stderr, name+": "+oneLine(msg))
		if !a.json && code == ExitUsage {
			// A bad flag stops parsing before a later --json is read.
			a.json = jsonFlagIn(args)
		}
		if a.json && (code == ExitInternal || code == ExitUsage || code == ExitInterrupted || code == ExitTerminated) {
			a.writeErrorJSON(err, code, msg)
		}
	}
	return code
}

// jsonFlagIn reports whether args ask for --json before "--", for a usage
// error that stopped cobra before it read the flag.
func jsonFlagIn(args []string) bool {
	on := false
	for _, arg := range args {
		if arg == "--" {
			break
		}
		name, value, hasValue := strings.Cut(arg, "=")
		if name != "--json" {
			continue
		}
		on = true
		if hasValue {
			b, err := strconv.ParseBool(value)
			on = err == nil && b
		}
	}
	return on
}

// app holds the environment and the global flags of one Main call.
type app struct {
	env Env

	workspace string
	user      string
	workflow  string
	session   string
	runID     string
	events    string
	json      bool
	version   bool
}

const rootLong = `hybridctx keeps LLM agent conversations bounded without losing anything.
A tool result at or below an inline threshold stays in the conversation; a
larger one is stored once in the workspace and replaced by a bounded notice
whose first line is its reference artifact://sha256/<hex>. The body comes back
only through an explicit, checked rehydration.

Global flags may stand anywhere before "--", as --flag value or --flag=value:
  --workspace URL|DIR   a directory (default .hybridctx in the current
                        directory), file:///abs/dir or mem:// (env
                        HYBRIDCTX_WORKSPACE); a file:// URL with a host is a
                        usage error (exit 2)
  --user, --workflow, --session
                        the owner (env HYBRIDCTX_USER, HYBRIDCTX_WORKFLOW,
                        HYBRIDCTX_SESSION; a flag wins over its variable).
                        offload, rehydrate, search, query, ls and stat
                        need all three.
  --run-id ID           run id of the progress events (default: random per
                        process)
  --events FILE|-       append progress events as JSON Lines to FILE (created
                        0600), or write them to standard error with "-"
  --json                machine-readable output on standard output; an
                        error of exit 1 or 2 then also prints
                        {"error": {"code", "message"}} there (codes below)

Error lines name the cause by category, never with raw storage or system
text. Only offload, mcp and demo create a missing workspace; the other
commands say "no workspace at PATH" (exit 1).
`

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "hybridctx",
		Short:         "Offload large tool results to a workspace and rehydrate them on request",
		Long:          rootLong + "\n" + errorCodesHelp() + "\n" + exitCodesHelp(nil),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	a.globalFlags(root)
	root.AddCommand(a.offloadCommand(), a.rehydrateCommand(), a.lsCommand(), a.statCommand(), a.verifyCommand(), a.demoCommand())
	root.AddCommand(a.mcpCommand())
	root.AddCommand(a.gcCommand())
	root.AddCommand(a.uiCommand())
	root.AddCommand(a.searchCommand(), a.queryCommand())
	root.AddCommand(a.versionCommand())
	root.Flags().BoolVar(&a.version, "version", false, "print the version (with --json, as an object) and exit")
	root.Args = cobra.NoArgs
	root.RunE = a.run(func(cmd *cobra.Command, _ []string) error {
		if a.version {
			return a.printVersion()
		}
		return cmd.Help()
	})
	for _, c := range root.Commands() {
		c.Long += "\n" + exitCodesHelp(commandExits[c.Name()])
	}
	return root
}

// globalFlags sets root's streams and flag errors and adds the global
// flags, persistent over every subcommand.
func (a *app) globalFlags(root *cobra.Command) {
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetIn(a.env.Stdin)
	root.SetOut(a.env.Stdout)
	root.SetErr(a.env.Stderr)
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.StringVar(&a.workspace, "workspace", "", "workspace directory or URL (env "+EnvWorkspace+"; default "+DefaultWorkspace+")")
	pf.StringVar(&a.user, "user", "", "owner user (env "+EnvUser+")")
	pf.StringVar(&a.workflow, "workflow", "", "owner workflow (env "+EnvWorkflow+")")
	pf.StringVar(&a.session, "session", "", "owner session (env "+EnvSession+")")
	pf.StringVar(&a.runID, "run-id", "", "run id of progress events (default: random per process)")
	pf.StringVar(&a.events, "events", "", `append progress events as JSON Lines to FILE, or "-" for standard error`)
	pf.BoolVar(&a.json, "json", false, "machine-readable output")
}

// run adapts a command body so that every error it returns carries an exit
// code: anything not already an *exitError is an internal error.
func (a *app) run(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		var ee *exitError
		if err == nil || errors.As(err, &ee) {
			return err
		}
		return internal("error", err)
	}
}

// setting returns a flag's value when it was given, else the variable's.
func (a *app) setting(cmd *cobra.Command, flag, value, envName string) string {
	if cmd.Flags().Changed(flag) {
		return value
	}
	return a.env.Getenv(envName)
}

// requireOwner resolves the complete owner of a host command, or returns a
// usage error naming the missing parts.
func (a *app) requireOwner(cmd *cobra.Command) (artifact.Owner, error) {
	o := artifact.Owner{
		User:     a.setting(cmd, "user", a.user, EnvUser),
		Workflow: a.setting(cmd, "workflow", a.workflow, EnvWorkflow),
		Session:  a.setting(cmd, "session", a.session, EnvSession),
	}
	if missing := o.Missing(); len(missing) > 0 {
		flags := make([]string, len(missing))
		vars := make([]string, len(missing))
		for i, m := range missing {
			flags[i] = "--" + m
			vars[i] = "HYBRIDCTX_" + strings.ToUpper(m)
		}
		return o, usagef("missing owner: %s (set %s or %s)",
			strings.Join(missing, ", "), strings.Join(flags, "/"), strings.Join(vars, "/"))
	}
	if err := o.Validate(); err != nil {
		return o, usagef("%v", err)
	}
	return o, nil
}

// workspaceCreators are the commands that write, and so may create the
// workspace they are given; every other command needs an existing one.
var workspaceCreators = map[string]bool{"offload": true, "mcp": true, "demo": true}

// openWorkspace opens the workspace named by --workspace, the environment or
// the default; only the commands of workspaceCreators create a missing one.
// A malformed URL is a usage error; any other failure, including a missing
// workspace, is exit 1.
func (a *app) openWorkspace(ctx context.Context, cmd *cobra.Command) (*workspace.Store, error) {
	return a.openWorkspaceAs(ctx, cmd, workspaceCreators[cmd.Name()])
}

// openWorkspaceAs is openWorkspace for a command that creates a missing
// workspace when create is true.
func (a *app) openWorkspaceAs(ctx context.Context, cmd *cobra.Command, create bool) (*workspace.Store, error) {
	u := a.setting(cmd, "workspace", a.workspace, EnvWorkspace)
	if !cmd.Flags().Changed("workspace") && u == "" {
		u = DefaultWorkspace
	}
	s, err := backend.Open(ctx, u, &backend.Options{MustExist: !create})
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, backend.ErrBadURL):
		return nil, usagef("--workspace: %v", err)
	case errors.Is(err, backend.ErrNoWorkspace):
		_, dir, _ := backend.Parse(u)
		return nil, &exitError{code: ExitInternal, err: err, category: &catNoWorkspace,
			msg: "no workspace at " + printable(dir) + " (offload creates one)"}
	}
	if c := errorCategoryOf(err); cmd.Name() == "verify" && (c == catDamaged || c == catDatabaseIO) {
		// The category's advice is to run verify: say what is left instead.
		return nil, &exitError{code: ExitInternal, err: err, category: &c, msg: "cannot open the workspace: " + verifyCannotOpen}
	}
	return nil, internal("cannot open the workspace", err)
}

// withReporter returns ctx carrying the progress reporter that --events asks
// for (ctx unchanged without --events) and a function that releases it.
func (a *app) withReporter(ctx context.Context, cmd *cobra.Command) (context.Context, func(), error) {
	r, _, release, err := a.eventsReporter(cmd)
	if err != nil || r == nil {
		return ctx, release, err
	}
	return hybridctx.WithReporter(ctx, r), release, nil
}

// eventsReporter builds the reporter that --events asks for: a JSON Lines
// sink on the events file (or standard error for "-") plus extra. Without
// --events it returns a nil reporter and writer. release closes the file.
func (a *app) eventsReporter(cmd *cobra.Command, extra ...hybridctx.Sink) (r *hybridctx.TreeReporter, w io.Writer, release func(), err error) {
	release = func() {}
	if !cmd.Flags().Changed("events") {
		return nil, nil, release, nil
	}
	switch a.events {
	case "":
		return nil, nil, nil, usagef("--events needs a file name or -")
	case "-":
		w = a.env.Stderr
	default:
		f, err := os.OpenFile(a.events, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, nil, usagef("cannot open the events file: %v", err)
		}
		w, release = f, func() { _ = f.Close() }
	}
	r = hybridctx.NewReporter(hybridctx.ReporterOptions{
		RunID:   a.runIDOrRandom(),
		AgentID: AgentID,
		Sinks:   append([]hybridctx.Sink{sink.NewJSONLines(w)}, extra...),
	})
	return r, w, release, nil
}

// runIDOrRandom returns --run-id, or a random id fixed for this process's
// command.
func (a *app) runIDOrRandom() string {
	if a.runID == "" {
		a.runID = randomID()
	}
	return a.runID
}

// hostBinding opens the workspace for a host command (hostSession) and binds
// owner to it; release closes both.
func (a *app) hostBinding(cmd *cobra.Command, owner artifact.Owner) (ctx context.Context, b *hybridctx.Binding, release func(), err error) {
	ctx, store, release, err := a.hostSession(cmd, true)
	if err != nil {
		return nil, nil, nil, err
	}
	if b, err = hybridctx.NewBinding(owner, store); err != nil {
		release()
		return nil, nil, nil, usagef("%v", err)
	}
	return ctx, b, release, nil
}

// hostRehydrator is hostBinding for the reading commands: the command's
// owner, bound, and a Rehydrator over it.
func (a *app) hostRehydrator(cmd *cobra.Command, opts *hybridctx.RehydratorOptions) (context.Context, *hybridctx.Rehydrator, func(), error) {
	owner, err := a.requireOwner(cmd)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, binding, release, err := a.hostBinding(cmd, owner)
	if err != nil {
		return nil, nil, nil, err
	}
	h, err := hybridctx.NewRehydrator(binding, opts)
	if err != nil {
		release()
		return nil, nil, nil, internal("rehydrate", err)
	}
	return ctx, h, release, nil
}

// hostSession opens the workspace and, when events is true, the reporter of
// a host command. release closes both.
func (a *app) hostSession(cmd *cobra.Command, events bool) (ctx context.Context, store *workspace.Store, release func(), err error) {
	ctx = cmd.Context()
	// The events file first: a usage error in --events must not leave a
	// workspace created behind.
	done := func() {}
	if events {
		ctx, done, err = a.withReporter(ctx, cmd)
		if err != nil {
			return nil, nil, nil, err
		}
	}
	store, err = a.openWorkspace(ctx, cmd)
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	return ctx, store, func() { done(); _ = store.Close() }, nil
}

// writeJSON writes v as one line of JSON on standard output.
func (a *app) writeJSON(v any) error {
	enc := json.NewEncoder(a.env.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return internal("writing the output", err)
	}
	return nil
}

// write writes b on standard output.
func (a *app) write(b []byte) error {
	if _, err := a.env.Stdout.Write(b); err != nil {
		return internal("writing the output", err)
	}
	return nil
}

// randomID returns 32 random lowercase hex digits.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
