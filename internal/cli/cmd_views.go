package cli

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hybridctx/hybridctx"
)

const viewsJSONHelp = `
With --json, standard output always gets one object
  {"outcome", "reason", "diagnostics", "page"}
plus, when resolved, "content_base64" (lines) or "answer" (search, query:
what standard output would get) and "summary" (the summary line's count);
"page" is {"total", "first", "count", "next"} ("next": the --skip or
--start-line to continue with, null when nothing is left) and, for a lines
read refused as over_budget, "line_offset" and "line_length". A categorical
outcome then prints nothing on standard error.
`

const searchLong = `Find the lines of a stored result that match PATTERN, without reading it whole.

The checks of rehydrate run in the same order (exit 3, 4, 5), then the body
is read once, hashed while it is searched; nothing is printed unless its
digest verified (exit 7). PATTERN is a literal unless --regex makes it Go RE2
syntax (at most 1,000 bytes; a malformed one is exit 2 before any storage
access). Standard output gets the matching lines alone, like grep -n:
"<line>:<text>" for a match, "<line>-<text>" for a context line, a line over
512 bytes cut around the match with its byte offset, invalid UTF-8 shown as
U+FFFD. Standard error gets the summary, "hybridctx: <M> matches (showing
<a>-<b>)", with "; continue with --skip N" when more remain. The lines and
the summary together are at most --budget bytes; over_budget (exit 6) only
when not even the first match fits.
` + viewsJSONHelp

const queryLong = `Run a jq filter over a stored JSON result and print its results.

The checks of rehydrate run in the same order (exit 3, 4, 5, 7), then FILTER
(jq syntax, at most 1,000 bytes; no environment, input or I/O; a malformed
one is exit 2 before any storage access) runs over the verified body with a
2 s time limit and a memory bound. Standard output gets its results alone,
as compact JSON, one per line (so "| jq ." works); standard error gets the
summary, "hybridctx: <M> results (showing <a>-<b>)", with "; continue with
--skip N" when more remain; results and summary together are at most
--budget bytes. A body that is not JSON, a filter that fails, or one that
exceeds its limits (or a body over --query-max-bytes) is view_failed
(exit 11).
` + viewsJSONHelp

// viewJSON is the --json shape of the lines, search and query views.
type viewJSON struct {
	Outcome       hybridctx.Outcome      `json:"outcome"`
	Reason        hybridctx.Reason       `json:"reason"`
	Diagnostics   *hybridctx.Diagnostics `json:"diagnostics"`
	Page          pageJSON               `json:"page"`
	ContentBase64 *string                `json:"content_base64,omitempty"`
	Answer        *string                `json:"answer,omitempty"`
	Summary       *string                `json:"summary,omitempty"`
}

type pageJSON struct {
	Total      int64  `json:"total"`
	First      int64  `json:"first"`
	Count      int64  `json:"count"`
	Next       *int64 `json:"next"`
	LineOffset *int64 `json:"line_offset,omitempty"`
	LineLength *int64 `json:"line_length,omitempty"`
}

func pageOf(r *hybridctx.Rehydration) pageJSON {
	p := pageJSON{Total: r.Page.Total, First: r.Page.First, Count: r.Page.Count}
	if r.Page.Next > 0 {
		n := r.Page.Next
		p.Next = &n
	}
	if r.Outcome() == hybridctx.OverBudget && r.View() == hybridctx.ViewLines {
		off, n := r.Page.LineOffset, r.Page.LineLength
		p.LineOffset, p.LineLength = &off, &n
	}
	return p
}

type searchFlags struct {
	budget                    int64
	regex, ignoreCase         bool
	context, maxMatches, skip int64
}

func (a *app) searchCommand() *cobra.Command {
	var o searchFlags
	cmd := &cobra.Command{
		Use:   "search REF PATTERN --budget N [--regex] [--ignore-case] [--context N] [--max-matches N] [--skip N]",
		Short: "Print the lines of a stored result that match a pattern",
		Long:  searchLong,
		Args:  cobra.ExactArgs(2),
	}
	cmd.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		req := hybridctx.SearchRequest{Reference: args[0], Pattern: args[1], Budget: o.budget, Regex: o.regex,
			IgnoreCase: o.ignoreCase, ContextLines: o.context, MaxMatches: o.maxMatches, Skip: o.skip}
		if err := needBudget(cmd, "search", o.budget); err != nil {
			return err
		}
		if err := req.Validate(); err != nil {
			return usagef("%s", readtoolsDetail(err))
		}
		return a.view(cmd, nil, func(ctx context.Context, h *hybridctx.Rehydrator) (*hybridctx.Rehydration, error) {
			return h.Search(ctx, req)
		})
	})
	f := cmd.Flags()
	f.Int64Var(&o.budget, "budget", 0, "most bytes of the whole answer (required, > 0)")
	f.BoolVar(&o.regex, "regex", false, "PATTERN is Go RE2 syntax")
	f.BoolVar(&o.ignoreCase, "ignore-case", false, "match regardless of case")
	f.Int64Var(&o.context, "context", 0, "lines shown before and after each match (0 to 10)")
	f.Int64Var(&o.maxMatches, "max-matches", 0, "most matches shown (default 50)")
	f.Int64Var(&o.skip, "skip", 0, "matches passed over before the first shown")
	return cmd
}

type queryFlags struct {
	budget, skip, maxBytes int64
}

func (a *app) queryCommand() *cobra.Command {
	var o queryFlags
	cmd := &cobra.Command{
		Use:   "query REF FILTER --budget N [--skip N]",
		Short: "Print the results of a jq filter over a stored JSON result",
		Long:  queryLong,
		Args:  cobra.ExactArgs(2),
	}
	cmd.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		req := hybridctx.QueryRequest{Reference: args[0], Filter: args[1], Budget: o.budget, Skip: o.skip}
		if err := needBudget(cmd, "query", o.budget); err != nil {
			return err
		}
		if o.maxBytes < 0 {
			return usagef("--query-max-bytes must be >= 0")
		}
		if err := req.Validate(); err != nil {
			return usagef("%s", readtoolsDetail(err))
		}
		opts := &hybridctx.RehydratorOptions{QueryMaxBytes: o.maxBytes}
		return a.view(cmd, opts, func(ctx context.Context, h *hybridctx.Rehydrator) (*hybridctx.Rehydration, error) {
			return h.Query(ctx, req)
		})
	})
	f := cmd.Flags()
	f.Int64Var(&o.budget, "budget", 0, "most bytes of the whole answer (required, > 0)")
	f.Int64Var(&o.skip, "skip", 0, "results passed over before the first shown")
	f.Int64Var(&o.maxBytes, "query-max-bytes", hybridctx.DefaultQueryMaxBytes, "largest body a filter runs over")
	return cmd
}

func needBudget(cmd *cobra.Command, name string, budget int64) error {
	if !cmd.Flags().Changed("budget") {
		return usagef("%s needs --budget N (> 0)", name)
	}
	if budget <= 0 {
		return usagef("--budget must be > 0")
	}
	return nil
}

// readtoolsDetail is the rule an invalid request broke, without the
// library's prefix.
func readtoolsDetail(err error) string {
	return strings.TrimPrefix(err.Error(), hybridctx.ErrInvalidRequest.Error()+": ")
}

// view runs one lines, search or query decision for the command's owner
// and prints it: the answer on standard output (a lines read that stopped
// early adds its note on standard error), or the categorical line.
func (a *app) view(cmd *cobra.Command, opts *hybridctx.RehydratorOptions,
	run func(context.Context, *hybridctx.Rehydrator) (*hybridctx.Rehydration, error)) error {
	ctx, h, closeSession, err := a.hostRehydrator(cmd, opts)
	if err != nil {
		return err
	}
	defer closeSession()
	r, err := run(ctx, h)
	if err != nil {
		return rehydrateError(err)
	}
	b := viewItems(r)
	if a.json {
		v := viewJSON{Outcome: r.Outcome(), Reason: r.Reason(), Diagnostics: r.Diagnostics(), Page: pageOf(r)}
		if r.Segment != nil {
			s := string(b)
			if r.View() == hybridctx.ViewLines {
				s = base64.StdEncoding.EncodeToString(b)
				v.ContentBase64 = &s
			} else {
				sum := r.Page.Summary
				v.Answer, v.Summary = &s, &sum
			}
		}
		if err := a.writeJSON(v); err != nil {
			return err
		}
		return outcomeExit(r.Outcome(), "")
	}
	if r.Outcome() != hybridctx.Resolved {
		return outcomeExit(r.Outcome(), categoricalLine(r))
	}
	if err := a.write(b); err != nil {
		return err
	}
	if note := viewNote(r); note != "" {
		a.note(note)
	}
	return nil
}

// note prints one line on standard error.
func (a *app) note(msg string) {
	_, _ = a.env.Stderr.Write([]byte("hybridctx: " + oneLine(msg) + "\n"))
}

// retrievalFlags are the policy flags of docs/rehydration.md: --preview-bytes (offload, mcp,
// demo) and, for the proxy, --tool-threshold NAME=N (repeatable) and
// --query-max-bytes.
type retrievalFlags struct {
	preview        int64
	toolThresholds []string
	queryMaxBytes  int64
}

func (r *retrievalFlags) register(f *pflag.FlagSet, proxy bool) {
	f.Int64Var(&r.preview, "preview-bytes", 0, "add the body's first whole lines, at most N bytes, to the notice (0: none)")
	if proxy {
		f.StringArrayVar(&r.toolThresholds, "tool-threshold", nil, "NAME=N: the inline threshold for tool NAME's results (repeatable)")
		f.Int64Var(&r.queryMaxBytes, "query-max-bytes", hybridctx.DefaultQueryMaxBytes, "largest body query_artifact runs a filter over")
	}
}

// apply sets the flags' policy fields, or returns a usage error.
func (r *retrievalFlags) apply(p *hybridctx.Policy) error {
	if r.preview < 0 || r.preview > hybridctx.MaxPreviewBytes {
		return usagef("--preview-bytes must be 0 to %d", hybridctx.MaxPreviewBytes)
	}
	if r.queryMaxBytes < 0 {
		return usagef("--query-max-bytes must be >= 0")
	}
	p.PreviewBytes = r.preview
	for _, kv := range r.toolThresholds {
		name, num, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(num, 10, 64)
		if !ok || strings.TrimSpace(name) == "" || err != nil || n <= 0 {
			return usagef("--tool-threshold takes NAME=N with N > 0")
		}
		if p.ToolThresholds == nil {
			p.ToolThresholds = map[string]int64{}
		}
		p.ToolThresholds[name] = n
	}
	return nil
}

// rehydratorOptions are the options of each session's Rehydrator: every
// session of one proxy process shares lim, so that its queries together
// stay within the process's bound (docs/rehydration.md).
func (r *retrievalFlags) rehydratorOptions(lim *hybridctx.QueryLimiter) *hybridctx.RehydratorOptions {
	return &hybridctx.RehydratorOptions{QueryMaxBytes: r.queryMaxBytes, QueryLimiter: lim}
}
