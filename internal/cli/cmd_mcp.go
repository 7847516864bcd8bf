package cli

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"os/user"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy"
	"github.com/hybridctx/hybridctx/sink"
)

// Defaults of the mcp command.
const (
	DefaultMCPThreshold = 16384
	DefaultMCPBudget    = mcpproxy.DefaultBudget
)

const mcpLong = `Run an MCP server (CMD ARGS…, started over stdio) behind a proxy that
serves an MCP client on this process's standard input and output and bounds
every tool result on the way.

Everything is forwarded both ways: initialize and capabilities, tools,
resources, prompts, completions, notifications (progress, list changes,
logging), server-to-client requests and cancellation. In each tools/call
result, every content block over --threshold bytes (text; the decoded bytes
of images, audio and embedded resources) and structuredContent over it (as
its JSON) is stored in the workspace and replaced by the bounded notice and a
resource_link to artifact://sha256/<hex>; stored structuredContent is
removed, and tools/list loses outputSchema so clients accept the bounded
results. Smaller blocks pass unchanged.

The proxy adds the read tools, served by itself: read_artifact {reference,
offset?, length? | start_line, line_count?, max_bytes?}, search_artifact and
query_artifact (budget: min(max_bytes, --budget)); --tool-threshold NAME=N
(repeatable) sets one tool's inline threshold, --preview-bytes N adds the
first lines of a text result to its notice, --query-max-bytes bounds the
bodies query_artifact parses. It serves resources/read of
artifact:// URIs (the whole body must fit --budget). Categorical outcomes
come back as isError tool results saying what to do next.

The owner defaults so one line of client configuration is enough: user = the
OS user name, workflow = the base name of CMD, session = a fresh random id per
proxy process (so another proxy cannot read this one's results). Pin
--session (or HYBRIDCTX_SESSION) to keep reading them after a restart.

Progress events, and one run summary line when the client leaves, go to
--events FILE (or standard error with "-"), never to standard output. The
server's standard error passes to this process's standard error. When the
server exits or crashes while the client is connected, the waiting requests
get an error, and the proxy exits 1 with one line on standard error.

Malformed messages never end the session: a line from the client that is not
JSON-RPC 2.0, or is over --max-message, is answered with a JSON-RPC error
(-32700 or -32600) when it carries an id, else dropped; from the server, such
a line is dropped (a request it answered gets an error). Only the first
response to each forwarded request reaches the client: a second one, one for
a request the proxy answers itself, or one for an id never sent is dropped.
Each drop is one warning line on standard error (side, reason, count; never
content). Request ids are answered exactly as the client wrote them.

Example MCP client configuration:
  {"command": "hybridctx", "args": ["mcp", "--workspace", "/home/ada/.hybridctx",
   "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/ada/src"]}
`

type mcpFlags struct {
	threshold, budget, maxBytes int64
	maxMessage                  int
	retrieval                   retrievalFlags
}

func (a *app) mcpCommand() *cobra.Command {
	var o mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp [--threshold N] [--budget N] -- CMD [ARGS...]",
		Short: "Run an MCP server behind a proxy that bounds its tool results",
		Long:  withExitCodes(mcpLong),
		Args:  cobra.MinimumNArgs(1),
	}
	cmd.RunE = a.run(func(cmd *cobra.Command, args []string) error { return a.mcp(cmd, args, o) })
	f := cmd.Flags()
	f.Int64Var(&o.threshold, "threshold", DefaultMCPThreshold, "largest content block, in bytes, that stays inline (> 0)")
	f.Int64Var(&o.budget, "budget", DefaultMCPBudget, "most bytes one read_artifact call or resources/read returns (> 0)")
	f.Int64Var(&o.maxBytes, "max-bytes", 0, "largest block that is stored (0: 1 GiB); a larger one gets a failure notice")
	f.IntVar(&o.maxMessage, "max-message", mcpproxy.DefaultMaxMessageBytes, "largest message accepted from the server or the client, in bytes (> 0); a larger one gets a JSON-RPC error")
	o.retrieval.register(f, true)
	return cmd
}

func (a *app) mcp(cmd *cobra.Command, args []string, o mcpFlags) error {
	if d := cmd.ArgsLenAtDash(); d > 0 {
		return usagef(`put the MCP server command after "--": hybridctx mcp [flags] -- CMD ARGS…`)
	}
	switch {
	case o.threshold <= 0:
		return usagef("--threshold must be > 0")
	case o.budget <= 0:
		return usagef("--budget must be > 0")
	case o.maxBytes < 0:
		return usagef("--max-bytes must be >= 0")
	case o.maxMessage <= 0:
		return usagef("--max-message must be > 0")
	}
	owner, err := a.mcpOwner(cmd, args[0])
	if err != nil {
		return err
	}
	ctx, store, release, err := a.hostSession(cmd, false)
	if err != nil {
		return err
	}
	defer release()
	rep, finish, err := a.mcpReporter(cmd)
	if err != nil {
		return err
	}
	defer finish()
	binding, err := hybridctx.NewBinding(owner, store)
	if err != nil {
		return usagef("%v", err)
	}
	policy := hybridctx.Policy{InlineThreshold: o.threshold, MaxArtifactBytes: o.maxBytes}
	if err := o.retrieval.apply(&policy); err != nil {
		return err
	}
	off, err := hybridctx.NewOffloader(binding, policy, nil)
	if err != nil {
		return usagef("%v", err)
	}
	reh, err := hybridctx.NewRehydrator(binding, o.retrieval.rehydratorOptions())
	if err != nil {
		return internal("mcp", err)
	}
	logger := slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	proxy, err := mcpproxy.NewProxy(off, reh, &mcpproxy.Options{Budget: o.budget, Reporter: rep, Logger: logger})
	if err != nil {
		return usagef("%v", err)
	}
	server := exec.Command(args[0], args[1:]...)
	server.Stderr = a.env.Stderr
	upstream := &mcpproxy.Command{Cmd: server, MaxMessageBytes: o.maxMessage}
	client := &mcpproxy.Stream{Reader: a.env.Stdin, Writer: a.env.Stdout, MaxMessageBytes: o.maxMessage}
	err = proxy.Run(ctx, upstream, client)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mcpproxy.ErrUpstreamStart):
		return usagef("%v", err)
	case errors.Is(err, mcpproxy.ErrUpstreamClosed):
		return &exitError{code: ExitInternal, msg: err.Error(), err: err}
	}
	return internal("mcp", err)
}

// mcpOwner resolves the proxy's owner: flags, then the environment, then the
// defaults of SPEC §10 (OS user name, base name of the server command, a
// fresh session id).
func (a *app) mcpOwner(cmd *cobra.Command, command string) (artifact.Owner, error) {
	o := artifact.Owner{
		User:     a.setting(cmd, "user", a.user, EnvUser),
		Workflow: a.setting(cmd, "workflow", a.workflow, EnvWorkflow),
		Session:  a.setting(cmd, "session", a.session, EnvSession),
	}
	if o.User == "" {
		u, err := user.Current()
		if err != nil || u.Username == "" {
			return o, usagef("cannot tell the OS user name; set --user or %s", EnvUser)
		}
		o.User = u.Username
	}
	if o.Workflow == "" {
		o.Workflow = filepath.Base(command)
	}
	if o.Session == "" {
		o.Session = randomID()
	}
	if err := o.Validate(); err != nil {
		return o, usagef("%v", err)
	}
	return o, nil
}

// mcpReporter returns the reporter that --events asks for (nil without it)
// and a function that writes the run summary and releases the file.
func (a *app) mcpReporter(cmd *cobra.Command) (hybridctx.Reporter, func(), error) {
	sum := sink.NewSummary()
	r, w, release, err := a.eventsReporter(cmd, sum)
	if err != nil || r == nil {
		return nil, release, err
	}
	done := func() {
		writeRunSummary(w, runSummary{Type: "run_summary", Time: time.Now().UTC().Format(hybridctx.TimeLayout),
			RunID: r.RunID(), AgentID: AgentID, SummaryReport: sum.Report()})
		release()
	}
	return r, done, nil
}

// runSummary is the last line of a proxy run's events: the run's
// sink.SummaryReport (counts per operation, outcome and reason, bytes kept
// out of context, bytes rehydrated) under the event's identifying keys.
type runSummary struct {
	Type    string `json:"type"`
	Time    string `json:"time"`
	RunID   string `json:"run_id"`
	AgentID string `json:"agent_id"`
	sink.SummaryReport
}

// writeRunSummary appends the summary as one JSON line, best effort like the
// events themselves.
func writeRunSummary(w io.Writer, s runSummary) {
	b, err := json.Marshal(s)
	if err != nil {
		return
	}
	_, _ = w.Write(append(b, '\n'))
}
