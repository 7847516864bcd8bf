package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"os/user"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy"
	"github.com/hybridctx/hybridctx/sink"
	"github.com/hybridctx/hybridctx/workspace"
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
results. Smaller blocks pass unchanged, until together they exceed
--result-threshold (default 4 × --threshold): then the largest are stored
one by one until the rest fits.

--listen ADDR serves MCP clients over Streamable HTTP at http://ADDR/mcp
instead of standard input and output: each MCP session gets its own
upstream (process), ended by DELETE or after --idle-timeout. The owner
follows the client's credential, not the MCP session, so an evicted or
restarted client keeps reading its references: without a token (or with
--token-env) all clients share the proxy's owner, as over stdio; with
--tokens-file FILE ("SESSION TOKEN" lines, chmod 600) each token's clients
own the session the file names; --session new gives each MCP session its
own random session instead (lost when the session ends). At
--max-sessions (per credential), a new session ends that credential's
least recently used one with no request in flight (its client gets 404 and
starts anew), and is refused (403) only when every one is busy; one
credential opens at most --session-burst sessions at once, then
--session-rate per second (429 past it). A loopback address checks Host
and Origin; any other address needs --token-env NAME (the environment
variable holding the bearer token every request must carry) or
--tokens-file. --url URL connects to an
upstream server over HTTP (Streamable HTTP, else HTTP+SSE) instead of
starting CMD; --header 'Name: value' adds request headers, with ${VAR}
expanded from the environment.

The proxy adds the read tools, served by itself: read_artifact {reference,
offset?, length? | start_line, line_count?, max_bytes?}, search_artifact and
query_artifact (budget: min(max_bytes, --budget)); --tool-threshold NAME=N
(repeatable) sets one tool's inline threshold, --preview-bytes N adds the
first lines of a text result to its notice, --query-max-bytes bounds the
bodies query_artifact parses. The sessions of one proxy share its query
slots: 2 queries run at once, up to 30 others wait up to 30 s, the rest
are refused as busy. It serves resources/read of
artifact:// URIs (the whole body must fit --budget). Categorical outcomes
come back as isError tool results saying what to do next.

The owner defaults so one line of client configuration is enough: user = the
OS user name, workflow = the base name of CMD and a short hash of the whole
command line ("python3-1a2b3c4d": two servers run by one launcher are two
owners), session = "default", so a
client that restarts the proxy (a resumed conversation) still reads the
references in its history. --session NAME (or HYBRIDCTX_SESSION) pins
another; --session new gives each proxy process a fresh random session, so
concurrent conversations never read each other's results. With --listen,
see above.

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

Large messages are never held whole: a tools/call result's text blocks,
base64 image, audio and embedded-resource payloads and structuredContent are
streamed into the workspace as they arrive (unescaped or decoded on the fly),
and any other large message, both ways, is spooled to the workspace's
temporary area (the system's for a non-directory workspace) and passed on in
pieces, so the proxy's memory does not grow with them; --max-message still
bounds every message.

The proxy's flags end at CMD's name: everything from there on is CMD's own
(so "hybridctx mcp npx -y PKG DIR" passes -y to npx). A "--" before CMD is
accepted too, and needed only when CMD's name begins with "-".

Example MCP client configuration:
  {"command": "hybridctx", "args": ["mcp", "--workspace", "/home/ada/.hybridctx",
   "npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/ada/src"]}
`

type mcpFlags struct {
	threshold, budget, maxBytes, resultThreshold int64
	maxMessage                                   int
	config                                       string // --config: the gateway's file
	retrieval                                    retrievalFlags
	tokens                                       mcpTokenFlags
	http                                         mcpHTTPFlags
}

func (a *app) mcpCommand() *cobra.Command {
	var o mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp [--threshold N] [--budget N] [--listen ADDR] (--url URL | [--] CMD [ARGS...])",
		Short: "Run an MCP server behind a proxy that bounds its tool results",
		Long:  mcpLong + mcpGatewayLong + mcpTokensLong,
		Args:  cobra.ArbitraryArgs,
	}
	cmd.RunE = a.run(func(cmd *cobra.Command, args []string) error { return a.mcp(cmd, args, o) })
	f := cmd.Flags()
	// The proxy's flags end at the upstream command's name, with or
	// without "--": client configurations pass "npx -y PKG" as it is, and
	// some cannot carry a literal "--".
	f.SetInterspersed(false)
	f.Int64Var(&o.threshold, "threshold", DefaultMCPThreshold, "largest content block, in bytes, that stays inline (> 0)")
	f.Int64Var(&o.resultThreshold, "result-threshold", 0, "most bytes the inline blocks of one result may total (0: 4 × --threshold)")
	f.Int64Var(&o.budget, "budget", DefaultMCPBudget, "most bytes one read_artifact call or resources/read returns (> 0)")
	f.Int64Var(&o.maxBytes, "max-bytes", 0, "largest block that is stored (0: 1 GiB); a larger one gets a failure notice")
	f.IntVar(&o.maxMessage, "max-message", mcpproxy.DefaultMaxMessageBytes, "largest message accepted from the server or the client, in bytes (> 0); a larger one gets a JSON-RPC error")
	f.StringVar(&o.config, "config", "", "run a gateway in front of every MCP server this file names (the clients' mcpServers format; docs/gateway.md)")
	o.retrieval.register(f, true)
	o.tokens.register(f)
	o.http.register(f)
	return cmd
}

func (a *app) mcp(cmd *cobra.Command, args []string, o mcpFlags) error {
	// "config" as the first word is reserved (a server named so runs
	// after "--").
	if len(args) > 0 && args[0] == "config" && cmd.ArgsLenAtDash() != 0 {
		return a.mcpConfigImport(args[1:])
	}
	if o.config == "" && len(args) == 0 && o.http.url == "" {
		o.config = a.env.Getenv(EnvMCPConfig)
	}
	if o.config != "" {
		if len(args) > 0 {
			return usagef("give either --config or a command, not both")
		}
		return a.mcpGateway(cmd, o.config, o)
	}
	if err := o.validate(cmd, args); err != nil {
		return err
	}
	policy, err := o.policy()
	if err != nil {
		return err
	}
	owner, err := a.mcpOwner(cmd, workflowName(o.http.url, args))
	if err != nil {
		return err
	}
	upstream, err := a.mcpUpstream(args, o)
	if err != nil {
		return err
	}
	creds, err := a.mcpCredentials(o.http)
	if err != nil {
		return err
	}
	ctx, store, rep, done, err := a.mcpHost(cmd)
	if err != nil {
		return err
	}
	defer done()
	logger := a.warnLogger()
	// one limiter for the process: every session's queries share it
	queries, err := hybridctx.NewQueryLimiter(0, 0)
	if err != nil {
		return internal("mcp", err)
	}
	newProxy := func(owner artifact.Owner) (*mcpproxy.Proxy, error) {
		_, off, reh, err := mcpBind(owner, store, policy, o.retrieval.rehydratorOptions(queries))
		if err != nil {
			return nil, err
		}
		proxy, err := mcpproxy.NewProxy(off, reh, &mcpproxy.Options{Budget: o.budget, Reporter: rep, Logger: logger, TempDir: store.TempDir()})
		if err != nil {
			return nil, usagef("%v", err)
		}
		return proxy, nil
	}
	if o.http.listen != "" {
		return a.mcpListen(ctx, cmd, o.http, o.maxMessage, creds, owner, newProxy, upstream)
	}
	proxy, err := newProxy(owner)
	if err != nil {
		return err
	}
	client := &mcpproxy.Stream{Reader: a.env.Stdin, Writer: a.env.Stdout, MaxMessageBytes: o.maxMessage}
	return mcpExit(proxy.Run(ctx, upstream(), client))
}

// policy is the Policy the flags ask for, or a usage error.
func (o *mcpFlags) policy() (hybridctx.Policy, error) {
	policy := hybridctx.Policy{InlineThreshold: o.threshold, MaxArtifactBytes: o.maxBytes, ResultThreshold: o.resultThreshold}
	if err := o.retrieval.apply(&policy); err != nil {
		return policy, err
	}
	if err := o.tokens.apply(&policy); err != nil {
		return policy, err
	}
	if err := policy.Validate(); err != nil {
		return policy, usagef("--threshold/--max-bytes: %v", err)
	}
	return policy, nil
}

// mcpBind binds owner to store and returns the binding with its Offloader
// under policy and its Rehydrator: what one proxy, or the gateway, serves.
func mcpBind(owner artifact.Owner, store *workspace.Store, policy hybridctx.Policy, reh *hybridctx.RehydratorOptions) (*hybridctx.Binding, *hybridctx.Offloader, *hybridctx.Rehydrator, error) {
	binding, err := hybridctx.NewBinding(owner, store)
	if err != nil {
		return nil, nil, nil, usagef("%v", err)
	}
	off, err := hybridctx.NewOffloader(binding, policy, nil)
	if err != nil {
		return nil, nil, nil, usagef("%v", err)
	}
	r, err := hybridctx.NewRehydrator(binding, reh)
	if err != nil {
		return nil, nil, nil, internal("mcp", err)
	}
	return binding, off, r, nil
}

// warnLogger logs warnings and errors to standard error.
func (a *app) warnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a.env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// mcpExit maps the end of a proxy run to the command's exit.
func mcpExit(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mcpproxy.ErrUpstreamStart):
		return usagef("%v", err)
	case errors.Is(err, mcpproxy.ErrUpstreamClosed), errors.Is(err, mcpproxy.ErrUpstreamUnreachable):
		return &exitError{code: ExitInternal, msg: upstreamLine(err), err: err}
	}
	return internal("mcp", err)
}

// mcpUpstream returns a function making one upstream transport (one per
// session): the command after "--", or --url.
func (a *app) mcpUpstream(args []string, o mcpFlags) (func() mcp.Transport, error) {
	if o.http.url != "" {
		header, err := a.mcpHeaders(o.http.headers)
		if err != nil {
			return nil, err
		}
		return func() mcp.Transport {
			return &mcpproxy.HTTPUpstream{URL: o.http.url, Header: header, MaxMessageBytes: o.maxMessage}
		}, nil
	}
	return func() mcp.Transport {
		server := exec.Command(args[0], args[1:]...)
		server.Stderr = a.env.Stderr
		return &mcpproxy.Command{Cmd: server, MaxMessageBytes: o.maxMessage, DropEnv: tokenVar(o.http)}
	}, nil
}

// DefaultMCPSession is the stdio proxy's session when none is given: a fixed
// name, so that a client that restarts the proxy (a resumed conversation, a
// relaunched app) still reads the references in its history. See
// docs/mcp-proxy.md.
const DefaultMCPSession = "default"

// NewMCPSession, given as --session, asks for a fresh random session per
// proxy process (per MCP session with --listen).
const NewMCPSession = "new"

// mcpOwner resolves the proxy's owner: flags, then the environment, then the
// defaults (OS user name, the workflow the server's command line gives, the
// fixed session DefaultMCPSession; NewMCPSession means a fresh random one).
func (a *app) mcpOwner(cmd *cobra.Command, workflow string) (artifact.Owner, error) {
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
		o.Workflow = workflow
	}
	switch o.Session {
	case "":
		o.Session = DefaultMCPSession
	case NewMCPSession:
		o.Session = randomID()
	}
	if err := o.Validate(); err != nil {
		return o, usagef("%v", err)
	}
	return o, nil
}

// mcpHost opens what a proxy or the gateway serves from: the reporter
// --events asks for, then the workspace session. done writes the run's
// summary and releases both.
func (a *app) mcpHost(cmd *cobra.Command) (ctx context.Context, store *workspace.Store, rep hybridctx.Reporter, done func(), err error) {
	// The events file first: a usage error in --events must not leave a
	// workspace created behind.
	rep, finish, abandon, err := a.mcpReporter(cmd)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ctx, store, release, err := a.hostSession(cmd, false)
	if err != nil {
		abandon()
		return nil, nil, nil, nil, err
	}
	return ctx, store, rep, func() { finish(); release() }, nil
}

// mcpReporter returns the reporter that --events asks for (nil without it),
// a function that writes the run summary and releases the file, and one that
// only releases it (for a run that never started).
func (a *app) mcpReporter(cmd *cobra.Command) (r hybridctx.Reporter, finish, abandon func(), err error) {
	sum := sink.NewSummary()
	tr, w, release, err := a.eventsReporter(cmd, sum)
	if err != nil || tr == nil {
		return nil, release, release, err
	}
	done := func() {
		writeRunSummary(w, runSummary{Type: "run_summary", Time: time.Now().UTC().Format(hybridctx.TimeLayout),
			RunID: tr.RunID(), AgentID: AgentID, SummaryReport: sum.Report()})
		release()
	}
	return tr, done, release, nil
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
