package benchcli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/internal/cli"
	"github.com/hybridctx/hybridctx/internal/workload"
	"github.com/hybridctx/hybridctx/workspace"
)

const benchLong = `Replay a workload of tool results through the agent-loop seam and print
what it measured as one JSON object on standard output.

By default the workload is generated from --seed: --count tool results (1000)
in two sessions that share one workspace, with log-normal sizes (median
8 KiB, 99.9th percentile 8 MiB, clamped to 8 MiB), 10% exact duplicates,
and a mix of log text, JSON and binary content. Every session is an
loop.Loop with a scripted model: it calls one tool per result, the
middleware decides each result under --threshold (default 4096 bytes), then
the model reads a 4 KiB range of every stored body through read_artifact,
and finally every stored body is read back whole through the same tool and
compared with the original bytes.

The JSON object holds: results and their bytes; history bytes as kept and
had every result been inlined, with their ratio (up to the last decision,
and again with the ranged reads); decisions by outcome; decision latency
(p50/p95/p99/max, microseconds, from a tool returning its result to the
decision's event), each percentile next to the SHA-256 time of the bytes
of its decision measured in the same run (hash_floor_us) and the ratio
(ratio_to_hash), the percentiles of every decision's latency over the
SHA-256 time of its own bytes (ratio_to_own_hash), and the percentiles of
those hash times themselves (hash_only_us: what an offloader that only
hashed would measure, the least this machine allows); rehydration latency,
whole and ranged; bytes offloaded, distinct bodies and their bytes, bodies
and bytes in the workspace, and, for a directory workspace, the bytes of
all its files (bodies, SQLite and its journal); the round-trip check; the
run's wall time. The first <ahead> MiB of results (the whole default
workload) are generated or decoded before the clock starts, so that
producing them takes no core from the decisions being timed; any results
after them are produced during the run.

--workload FILE replays FILE instead ("-" for standard input): JSON Lines,
one tool result per line,
  {"session": "...", "tool": "...", "call_id": "...", "content": "..."}
with "content_base64" instead of "content" for bytes that are not UTF-8.
Other keys are ignored. Tool names are 1 to <max> bytes of [A-Za-z0-9_.-];
call ids may be empty, and up to <max> bytes of UTF-8 (what a workspace
record stores).
--emit-workload FILE writes the generated workload in that form ("-" for
standard output) and exits without running it.

The workspace is a fresh temporary directory, removed afterwards, unless
--workspace is given (HYBRIDCTX_WORKSPACE is not read, so a benchmark never
writes into a workspace by accident). The owner of each session is --user
(default "bench"), --workflow (default "bench-" and a random id, so that
runs against one workspace stay apart) and the workload's session name.

--questions adds the context-economy benchmark: for every stored result, one
question with a known answer (the line of a text result holding a token found
nowhere else in it; the value at a path of a JSON result), answered by a
scripted model three times: with byte pages of read_artifact only; with the
targeted tools (search_artifact, then read_artifact by line when the line was
cut; query_artifact); and led by the notice (its first call the one the
notice shows, the placeholder filled in: the token, or a JSON filter written
from the notice's shape of the document; then as the targeted tools).
"questions" in the report gives, per strategy (byte_pages, targeted_tools,
notice_led), calls and bytes rehydrated per question (p50, p95, max) and the
exact answers. It needs a generated workload or a --workload file (it reads
the workload twice).

A round trip that does not return the original bytes, or a history that
breaks its invariant, exits 1 after printing the report.
`

type benchFlags struct {
	seed      uint64
	count     int
	threshold int64
	workload  string
	emit      string
	questions bool
	hist      historyFlags
}

func (a *app) benchCommand() *cobra.Command {
	var o benchFlags
	cmd := &cobra.Command{
		Use:   "hybridctx-bench [--seed N] [--count N] [--threshold N] [--workload FILE | --emit-workload FILE]",
		Short: "Replay a seeded or given workload through the agent loop and print measurements as JSON",
		Long: strings.NewReplacer(
			"<max>", strconv.Itoa(workload.MaxCallIDLen),
			"<ahead>", strconv.Itoa(workload.DefaultReadAhead>>20)).Replace(benchLong),
		Args: cobra.NoArgs,
	}
	cmd.RunE = a.Run(func(cmd *cobra.Command, _ []string) error { return a.bench(cmd, o) })
	f := cmd.Flags()
	f.Uint64Var(&o.seed, "seed", 1, "seed of the generated workload")
	f.IntVar(&o.count, "count", workload.DefaultCount, "tool results in the generated workload (> 0)")
	f.Int64Var(&o.threshold, "threshold", workload.DefaultThreshold, "largest tool result, in bytes, that stays inline (> 0)")
	f.StringVar(&o.workload, "workload", "", `replay this JSON Lines workload ("-" for standard input)`)
	f.StringVar(&o.emit, "emit-workload", "", `write the generated workload as JSON Lines to FILE ("-" for standard output) and exit`)
	f.BoolVar(&o.questions, "questions", false, "also answer one question per stored result with byte pages, with the targeted tools and as the notice leads")
	addHistoryFlags(cmd, &o.hist)
	return cmd
}

// benchJSON is the output of bench: the workload, the workspace, then the
// runner's report.
type benchJSON struct {
	Workload  benchWorkload  `json:"workload"`
	Workspace benchWorkspace `json:"workspace"`
	*workload.Report
	Questions *workload.QuestionReport `json:"questions,omitempty"`
}

type benchWorkload struct {
	Source string  `json:"source"` // "generated" or "file"
	Seed   *uint64 `json:"seed,omitempty"`
	Count  *int    `json:"count,omitempty"`
}

type benchWorkspace struct {
	// Kind is "temporary directory", or the kind of the given workspace
	// (dir, mem, ...).
	Kind string `json:"kind"`
	// DiskBytes sums the sizes of a directory workspace's files after the
	// run; null for other backends.
	DiskBytes *int64 `json:"disk_bytes"`
}

func (a *app) bench(cmd *cobra.Command, o benchFlags) error {
	f := cmd.Flags()
	switch {
	case o.threshold <= 0:
		return cli.Usagef("--threshold must be > 0")
	case o.threshold > cli.MaxThreshold:
		return cli.Usagef("--threshold must be at most %d bytes (64 MiB)", int64(cli.MaxThreshold))
	case o.count <= 0:
		return cli.Usagef("--count must be > 0")
	case o.workload != "" && o.emit != "":
		return cli.Usagef("--workload and --emit-workload exclude each other")
	case o.workload != "" && (f.Changed("seed") || f.Changed("count")):
		return cli.Usagef("--seed and --count shape the generated workload; they do not apply to --workload")
	case f.Changed("session"):
		return cli.Usagef("--session does not apply to bench: sessions come from the workload")
	case o.questions && o.workload == "-":
		return cli.Usagef("--questions reads the workload twice: give a --workload file, not standard input")
	}
	if o.emit != "" {
		return a.emitWorkload(o)
	}
	if o.hist.on || historyFlagsSet(f) {
		return a.benchHistory(cmd, o)
	}
	env, err := a.openBench(cmd, o)
	if err != nil {
		return err
	}
	defer env.close()
	ctx, src, wl, store, info := env.ctx, env.src, env.wl, env.store, env.info
	user, workflow := a.UserWorkflow(cmd)
	opts := &workload.RunOptions{Threshold: o.threshold, User: user, Workflow: workflow, RunID: a.RunID()}
	if opts.Workflow == "" {
		opts.Workflow = "bench-" + cli.RandomID()[:12]
	}
	if events := hybridctx.ReporterFrom(ctx); events != nil {
		opts.RunID = events.RunID()
		opts.Sinks = []hybridctx.Sink{hybridctx.SinkFunc(func(ctx context.Context, e *hybridctx.Event) error {
			events.Report(ctx, e)
			return nil
		})}
	}
	rep, err := workload.Run(ctx, src, store, opts)
	switch {
	case errors.Is(err, workload.ErrField) || errors.Is(err, workload.ErrSyntax) || errors.Is(err, workload.ErrLineTooLong):
		return cli.Usagef("--workload: %v", err)
	case err != nil:
		return cli.Internal("bench", err)
	}
	var questions *workload.QuestionReport
	if o.questions {
		src2, _, closeSrc2, err := a.benchSource(o)
		if err != nil {
			return err
		}
		questions, err = workload.AskQuestions(ctx, src2, store, workload.QuestionOptions{
			Threshold: o.threshold, User: opts.User, Workflow: opts.Workflow})
		closeSrc2()
		if err != nil {
			return cli.Internal("bench: questions", err)
		}
	}
	if info.dir != "" {
		n, err := dirBytes(info.dir)
		if err != nil {
			return cli.Internal("bench: measuring the workspace", err)
		}
		info.out.DiskBytes = &n
	}
	if err := a.WriteJSON(benchJSON{Workload: wl, Workspace: info.out, Report: rep, Questions: questions}); err != nil {
		return err
	}
	switch {
	case !rep.RoundTrip.OK:
		return cli.Fail(fmt.Sprintf("bench: round trip failed: %d of %d reads did not return the original bytes",
			rep.RoundTrip.Mismatched, rep.RoundTrip.Checked))
	case rep.HistoryWithReads.InvariantErrors > 0:
		return cli.Fail(fmt.Sprintf("bench: %d conversations broke the history invariant",
			rep.HistoryWithReads.InvariantErrors))
	}
	return nil
}

// benchEnv is what both benches run on: the workload, the workspace and
// the event reporter (in ctx); close releases them in reverse order.
type benchEnv struct {
	ctx   context.Context
	src   workload.Source
	wl    benchWorkload
	store *workspace.Store
	info  benchTarget
	close func()
}

// openBench opens a bench's workload, workspace and reporter.
func (a *app) openBench(cmd *cobra.Command, o benchFlags) (*benchEnv, error) {
	src, wl, closeSrc, err := a.benchSource(o)
	if err != nil {
		return nil, err
	}
	ctx, store, info, release, err := a.benchWorkspace(cmd)
	if err != nil {
		closeSrc()
		return nil, err
	}
	ctx, done, err := a.WithReporter(ctx, cmd)
	if err != nil {
		release()
		closeSrc()
		return nil, err
	}
	return &benchEnv{ctx: ctx, src: src, wl: wl, store: store, info: info, close: func() {
		done()
		release()
		closeSrc()
	}}, nil
}

// benchSource opens the workload: the given file, or the generator.
func (a *app) benchSource(o benchFlags) (workload.Source, benchWorkload, func(), error) {
	if o.workload == "" {
		g, err := workload.Generate(&workload.GenerateOptions{Seed: o.seed, Count: o.count})
		if err != nil {
			return nil, benchWorkload{}, nil, cli.Usagef("%v", err)
		}
		return g, benchWorkload{Source: "generated", Seed: &o.seed, Count: &o.count}, func() {}, nil
	}
	if o.workload == "-" {
		return workload.NewReader(a.Stdin(), nil), benchWorkload{Source: "file"}, func() {}, nil
	}
	file, err := os.Open(o.workload)
	if err != nil {
		return nil, benchWorkload{}, nil, cli.Usagef("cannot read the workload: %v", err)
	}
	return workload.NewReader(file, nil), benchWorkload{Source: "file"}, func() { _ = file.Close() }, nil
}

// benchTarget describes the workspace a bench runs against.
type benchTarget struct {
	out benchWorkspace
	dir string // the directory to measure, if any
}

// benchWorkspace opens --workspace when given, else a fresh temporary
// directory workspace that release removes.
func (a *app) benchWorkspace(cmd *cobra.Command) (context.Context, *workspace.Store, benchTarget, func(), error) {
	ctx := cmd.Context()
	if cmd.Flags().Changed("workspace") {
		kind, dir, err := backend.Parse(a.Workspace())
		if err != nil {
			return nil, nil, benchTarget{}, nil, cli.Usagef("--workspace: %v", err)
		}
		store, err := a.OpenWorkspace(ctx, cmd)
		if err != nil {
			return nil, nil, benchTarget{}, nil, err
		}
		t := benchTarget{out: benchWorkspace{Kind: kind}}
		if kind == "dir" {
			t.dir = dir
		}
		return ctx, store, t, func() { _ = store.Close() }, nil
	}
	dir, err := os.MkdirTemp("", "hybridctx-bench-")
	if err != nil {
		return nil, nil, benchTarget{}, nil, cli.Internal("bench: creating a temporary workspace", err)
	}
	store, err := backend.Open(ctx, dir, nil)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, benchTarget{}, nil, cli.Internal("cannot open the workspace", err)
	}
	release := func() {
		_ = store.Close()
		_ = os.RemoveAll(dir)
	}
	return ctx, store, benchTarget{out: benchWorkspace{Kind: "temporary directory"}, dir: dir}, release, nil
}

// emitWorkload writes the generated workload as JSON Lines.
func (a *app) emitWorkload(o benchFlags) (err error) {
	g, err := workload.Generate(&workload.GenerateOptions{Seed: o.seed, Count: o.count})
	if err != nil {
		return cli.Usagef("%v", err)
	}
	var w io.Writer = a.Stdout()
	if o.emit != "-" {
		file, err := os.OpenFile(o.emit, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return cli.Usagef("cannot create the workload file: %v", err)
		}
		defer func() {
			if cerr := file.Close(); cerr != nil && err == nil {
				err = cli.Internal("writing the workload", cerr)
			}
		}()
		w = file
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	jw := workload.NewWriter(bw)
	for {
		it, err := g.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return cli.Internal("generating the workload", err)
		}
		if err := jw.Write(it); err != nil {
			return cli.Internal("writing the workload", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return cli.Internal("writing the workload", err)
	}
	return nil
}

// dirBytes sums the sizes of the regular files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}
