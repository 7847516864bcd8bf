package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
	"github.com/hybridctx/hybridctx/agent/loop"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/sink"
)

const demoLong = `Run a scripted agent conversation against the workspace and print what
happened: no language model, no network. A root agent investigates a failed
nightly build: it fetches a 1 MB build log (offloaded), reads its tail back
through read_artifact, asks for the whole log (over budget: the model is told
to page), looks up a small ticket (inline), delegates the test report to a
sub-agent (which offloads a 30 KB report and reads part of it), fetches the
log again (existing reference) and answers. It starts with the short logs of
three earlier nights (inline), so tonight's log takes the root's history over
its budget (--history-budget, default 6144 bytes of tool content; 0 turns it
off): the two oldest tool results are masked to references, losslessly, in
one step, and the transcript marks them [masked].

Standard output gets the transcript, one line per message, then the run
summary: history bytes with and without offload, decisions by outcome, bytes
kept out of context and rehydrated. With --json it gets one object instead:
  {"run_id", "final", "turns", "tool_calls", "history": {"bytes",
   "without_offload"}, "summary": {...}}
where summary is the run summary sink's shape (see package sink).

The owner defaults to user "demo", workflow "demo" and a random session,
unless --user, --workflow, --session or their variables set them.
--threshold N is the inline threshold (default 4096); --budget N caps every
read (default 65536). Any threshold works: a result that stays inline is
read there, and since the two most recent results are never masked, the
default history budget grows to fit two of the largest result that stays
inline (an explicit --history-budget below that is a usage error). --events - streams progress events as JSON Lines on
standard error (--events FILE appends them to FILE); otherwise, when
standard error is a terminal, one live status line is drawn there and
erased at the end.
`

type demoFlags struct {
	threshold int64
	budget    int64
	history   int64
	retrieval retrievalFlags
}

// demoHistoryBudget is the demo's default history budget: small enough
// that its scenario compacts.
const demoHistoryBudget = 6144

// demoHistoryFloor is the least history budget the scenario can meet at
// threshold (0: any): the demoKeepRecent most recent tool results are never
// masked, so when one of the scenario's large results (the build log, the
// test report) stays inline, two of its size and the masks of the others
// must fit.
func demoHistoryFloor(threshold int64) int64 {
	var largest int64
	for _, n := range []int64{demoLogBytes, demoReportBytes} {
		if n <= threshold {
			largest = max(largest, n)
		}
	}
	if largest == 0 {
		return 0
	}
	return demoKeepRecent*largest + demoMaxToolResults*hybridctx.MaxMaskLen
}

func (a *app) demoCommand() *cobra.Command {
	var o demoFlags
	cmd := &cobra.Command{
		Use:   "demo [--threshold N] [--budget N]",
		Short: "Run a scripted agent conversation with a sub-agent and print the run summary",
		Long:  demoLong,
		Args:  cobra.NoArgs,
	}
	cmd.RunE = a.run(func(cmd *cobra.Command, _ []string) error { return a.demo(cmd, o) })
	f := cmd.Flags()
	f.Int64Var(&o.threshold, "threshold", 4096, "largest tool result, in bytes, that stays inline (> 0)")
	f.Int64Var(&o.budget, "budget", agent.DefaultBudgetCap, "cap on every read tool call, in bytes (> 0)")
	f.Int64Var(&o.history, "history-budget", demoHistoryBudget, "tool content each history may hold before its oldest results are masked, in bytes (0: no budget)")
	o.retrieval.register(f, false)
	return cmd
}

// demoOwner resolves the owner, defaulting what is not given.
func (a *app) demoOwner(cmd *cobra.Command) (artifact.Owner, error) {
	o := artifact.Owner{
		User:     a.setting(cmd, "user", a.user, EnvUser),
		Workflow: a.setting(cmd, "workflow", a.workflow, EnvWorkflow),
		Session:  a.setting(cmd, "session", a.session, EnvSession),
	}
	if strings.TrimSpace(o.User) == "" {
		o.User = "demo"
	}
	if strings.TrimSpace(o.Workflow) == "" {
		o.Workflow = "demo"
	}
	if strings.TrimSpace(o.Session) == "" {
		o.Session = randomID()
	}
	if err := o.Validate(); err != nil {
		return o, usagef("%v", err)
	}
	return o, nil
}

// demoJSON is the --json shape of demo.
type demoJSON struct {
	RunID     string             `json:"run_id"`
	Final     string             `json:"final"`
	Turns     int                `json:"turns"`
	ToolCalls int                `json:"tool_calls"`
	History   loop.Size          `json:"history"`
	Summary   sink.SummaryReport `json:"summary"`
}

func (a *app) demo(cmd *cobra.Command, o demoFlags) error {
	if o.threshold <= 0 || o.budget <= 0 {
		return usagef("--threshold and --budget must be > 0")
	}
	if o.history < 0 {
		return usagef("--history-budget must be >= 0")
	}
	if o.threshold > maxThreshold {
		return usagef("--threshold must be at most %d bytes (64 MiB)", int64(maxThreshold))
	}
	if err := o.retrieval.apply(&hybridctx.Policy{}); err != nil {
		return err
	}
	if floor := demoHistoryFloor(o.threshold); o.history > 0 && o.history < floor {
		if cmd.Flags().Changed("history-budget") {
			return usagef("--history-budget %d cannot be met at --threshold %d: a result of the scenario then stays inline, "+
				"and the %d most recent results stay whole; give at least %d (or 0)", o.history, o.threshold, demoKeepRecent, floor)
		}
		o.history = floor
	}
	owner, err := a.demoOwner(cmd)
	if err != nil {
		return err
	}
	ctx, store, release, err := a.hostSession(cmd, true)
	if err != nil {
		return err
	}
	defer release()

	// One reporter tree for the run: the summary, the --events stream (the
	// reporter hostSession built, if any) and the status line.
	summary := sink.NewSummary()
	sinks := []hybridctx.Sink{summary}
	runID := a.runID
	if runID == "" {
		runID = randomID()
	}
	if events := hybridctx.ReporterFrom(ctx); events != nil {
		runID = events.RunID()
		sinks = append(sinks, hybridctx.SinkFunc(func(ctx context.Context, e *hybridctx.Event) error {
			events.Report(ctx, e)
			return nil
		}))
	}
	toStderr := cmd.Flags().Changed("events") && a.events == "-"
	if f, ok := a.env.Stderr.(*os.File); ok && !toStderr && term.IsTerminal(int(f.Fd())) {
		st := &statusLine{w: f, summary: summary}
		sinks = append(sinks, st)
		defer st.clear()
	}
	ctx = hybridctx.WithReporter(ctx, hybridctx.NewReporter(hybridctx.ReporterOptions{RunID: runID, AgentID: AgentID, Sinks: sinks}))

	binding, err := hybridctx.NewBinding(owner, store)
	if err != nil {
		return usagef("%v", err)
	}
	run, err := newDemoRun(binding, o)
	if err != nil {
		return internal("demo", err)
	}
	res, err := run.play(ctx)
	if errors.Is(err, loop.ErrInvariant) {
		// The demo's own check failed: an internal error, never storage.
		return &exitError{code: ExitInternal, msg: "demo: " + err.Error(), err: err, category: &catInternal}
	} else if err != nil {
		return internal("demo", err)
	}
	size := run.size()
	rep := summary.Report() // its history counts the steps' history_compaction events
	if a.json {
		return a.writeJSON(demoJSON{RunID: runID, Final: res.Final, Turns: run.turns, ToolCalls: run.calls,
			History: size, Summary: rep})
	}
	var b strings.Builder
	run.transcript(&b)
	writeDemoSummary(&b, runID, run, size, rep, o.threshold)
	return a.write([]byte(b.String()))
}

// demoRun is one play of the scenario: the root loop and every history.
type demoRun struct {
	root     *loop.Loop
	rootHist *loop.History
	mu       sync.Mutex
	subs     []*loop.History
	turns    int
	calls    int
}

func newDemoRun(binding *hybridctx.Binding, o demoFlags) (*demoRun, error) {
	policy := hybridctx.Policy{InlineThreshold: o.threshold, History: hybridctx.HistoryPolicy{Budget: o.history, KeepRecent: demoKeepRecent}}
	if o.history == 0 {
		policy.History = hybridctx.HistoryPolicy{}
	}
	if err := o.retrieval.apply(&policy); err != nil {
		return nil, err
	}
	off, err := hybridctx.NewOffloader(binding, policy, nil)
	if err != nil {
		return nil, err
	}
	reh, err := hybridctx.NewRehydrator(binding, nil)
	if err != nil {
		return nil, err
	}
	mw, err := agent.NewMiddleware(off)
	if err != nil {
		return nil, err
	}
	tools, err := agent.NewReadTools(reh, &agent.ReadToolOptions{BudgetCap: o.budget})
	if err != nil {
		return nil, err
	}
	read := tools.Read()
	r := &demoRun{}
	delegate, err := loop.DelegateTool(loop.DelegateOptions{
		AgentID:     demoSubAgent,
		Description: "Hand a task to a research sub-agent that can read the test report.",
		New: func(_ context.Context, task string) (*loop.Loop, *loop.History, error) {
			l, err := loop.NewLoop(loop.Config{Model: loop.NewScriptedModel(demoSubScript(tools.Query().Name())...),
				Middleware: mw, Tools: append(demoSubTools(), tools.Search().Tool(), tools.Query().Tool()), ReadTool: read})
			if err != nil {
				return nil, nil, err
			}
			h, err := loop.NewHistory(o.threshold, loop.Message{Role: loop.RoleUser, Content: task})
			if err != nil {
				return nil, nil, err
			}
			r.mu.Lock()
			r.subs = append(r.subs, h)
			r.mu.Unlock()
			return l, h, nil
		},
	})
	if err != nil {
		return nil, err
	}
	r.root, err = loop.NewLoop(loop.Config{Model: loop.NewScriptedModel(demoRootScript(read.Name(), tools.Search().Name())...),
		Middleware: mw, Tools: append(demoTools(), delegate, tools.Search().Tool(), tools.Query().Tool()), ReadTool: read})
	if err != nil {
		return nil, err
	}
	r.rootHist, err = loop.NewHistory(o.threshold, loop.Message{Role: loop.RoleUser, Content: demoQuestion})
	return r, err
}

// histories returns the root's history, then the sub-agents'.
func (r *demoRun) histories() []*loop.History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*loop.History{r.rootHist}, r.subs...)
}

// play runs the scenario and checks every history's invariant.
func (r *demoRun) play(ctx context.Context) (*loop.Result, error) {
	res, err := r.root.Run(ctx, r.rootHist)
	if err != nil {
		return nil, err
	}
	for _, h := range r.histories() {
		if err := h.Verify(); err != nil {
			return nil, err
		}
		for _, m := range h.Messages() {
			switch m.Role {
			case loop.RoleAssistant:
				r.turns++
			case loop.RoleTool:
				r.calls++
			}
		}
	}
	if len(r.subs) == 0 {
		return nil, errors.New("the sub-agent did not run")
	}
	return res, nil
}

// size weighs every history of the run together.
func (r *demoRun) size() loop.Size {
	var s loop.Size
	for _, h := range r.histories() {
		hs := h.Size()
		s.Bytes += hs.Bytes
		s.WithoutOffload += hs.WithoutOffload
	}
	return s
}

// transcript writes one line per message: agent, role (with the decision
// of a tool message) and a line of the content (see highlight, cut to 100
// bytes), followed by the tool calls.
func (r *demoRun) transcript(w io.Writer) {
	for i, h := range r.histories() {
		name := AgentID
		if i > 0 {
			name = fmt.Sprintf("%s-%d", demoSubAgent, i)
		}
		for _, m := range h.Messages() {
			first, more := highlight(m.Content)
			line := artifact.TruncateUTF8(first, 100)
			if more || len(line) < len(first) {
				line += " …"
			}
			for _, c := range m.ToolCalls {
				line = strings.TrimSpace(line + " → " + c.Name + " " + string(c.Arguments))
			}
			tag := string(m.Role)
			switch {
			case m.Role == loop.RoleTool && m.Masked:
				tag += " [masked]"
			case m.Role == loop.RoleTool && m.Offload != nil && m.Offload.Reason() == hybridctx.RecoveredSegmentBypass:
				tag += " [recovered]"
			case m.Role == loop.RoleTool && m.Offload != nil:
				tag += " [" + m.Offload.Outcome().String() + "]"
			case m.IsError:
				tag += " [error]"
			}
			fmt.Fprintf(w, "%-12s %-25s %s\n", name, tag, line)
		}
	}
	fmt.Fprintln(w)
}

// highlight returns the line of content the transcript shows: the first
// one mentioning an error, else the first; more reports other lines.
func highlight(content string) (line string, more bool) {
	first, _, more := strings.Cut(content, "\n")
	if !more {
		return first, false
	}
	for l := range strings.Lines(content) {
		if strings.Contains(strings.ToLower(l), "error") {
			return strings.TrimSuffix(l, "\n"), true
		}
	}
	return first, true
}

// writeDemoSummary writes the run summary lines.
func writeDemoSummary(w io.Writer, runID string, r *demoRun, size loop.Size, rep sink.SummaryReport, threshold int64) {
	pct := 0.0
	if size.WithoutOffload > 0 {
		pct = 100 * float64(size.Bytes) / float64(size.WithoutOffload)
	}
	fmt.Fprintf(w, "run %s: %d agents, %d model turns, %d tool calls\n", runID, rep.Agents, r.turns, r.calls)
	fmt.Fprintf(w, "history      %s bytes with offload, %s without (%.1f%%)\n", sink.Thousands(size.Bytes), sink.Thousands(size.WithoutOffload), pct)
	_ = rep.WriteText(w) // the summary's own lines, as the ui page shows them
	fmt.Fprintf(w, "invariant    ok: no tool message holds a body over the %s-byte threshold\n", sink.Thousands(threshold))
}

// statusLine is a sink drawing one live status line on a terminal.
type statusLine struct {
	mu      sync.Mutex
	w       io.Writer
	summary *sink.Summary
	drawn   bool
}

// Emit implements hybridctx.Sink; it runs after the summary saw the event.
func (s *statusLine) Emit(_ context.Context, e *hybridctx.Event) error {
	if e.Diagnostics == nil {
		return nil // a compaction step: no decision to count
	}
	rep := s.summary.Report()
	line := fmt.Sprintf("hybridctx demo · %s · %d decisions · %s bytes kept out of context · %s rehydrated",
		e.AgentID, rep.Events, sink.Thousands(rep.BytesKeptOutOfContext), sink.Thousands(rep.BytesRehydrated))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drawn = true
	_, err := io.WriteString(s.w, "\r\x1b[K"+artifact.TruncateUTF8(line, 200))
	return err
}

// clear erases the status line, if one was drawn.
func (s *statusLine) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drawn {
		_, _ = io.WriteString(s.w, "\r\x1b[K")
	}
}
