package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/workspace"
)

const rehydrateLong = `Resolve one reference, or a byte range of it, back into its verified bytes.

Checks run in order: the reference's syntax (exit 3), this owner's record of
it (exit 4), the body's presence (exit 5), the range against --budget before
anything is read (exit 6), the digest of the whole body before anything is
released (exit 7). --offset and --length (0 = to the end) select a range,
clamped to the body like an HTTP range. --start-line N (1-based) reads whole
lines instead (--line-count, default 100; not with --offset/--length): as
many as fit --budget, in memory, and where they stop early a one-line note
on standard error says where to continue (--start-line N); a first line
larger than --budget is over_budget with its byte offset and length. A
--start-line past the last line prints nothing and exits 0, like a range
past the end, with a note on standard error giving the body's line count.

Resolved: exactly the verified bytes on standard output, streamed in bounded
memory. A body that changes while it is copied is exit 1: every byte may
already be on standard output, but they must not be trusted. Any other outcome: nothing on standard output and one
categorical line on standard error.

With --json, standard output always gets one object
  {"outcome", "reason", "diagnostics"}
plus "content_base64" when resolved (the bytes are held in memory, at most
--budget of them), and a categorical outcome prints nothing on standard error.
`

type rehydrateFlags struct {
	budget, offset, length int64
	startLine, lineCount   int64
}

func (a *app) rehydrateCommand() *cobra.Command {
	var o rehydrateFlags
	cmd := &cobra.Command{
		Use:   "rehydrate REF --budget N [--offset N] [--length N | --start-line N [--line-count N]]",
		Short: "Print the verified bytes of a reference",
		Long:  rehydrateLong,
		Args:  cobra.ExactArgs(1),
	}
	cmd.RunE = a.run(func(cmd *cobra.Command, args []string) error { return a.rehydrate(cmd, args[0], o) })
	f := cmd.Flags()
	f.Int64Var(&o.budget, "budget", 0, "most bytes that may be returned (required, > 0)")
	f.Int64Var(&o.offset, "offset", 0, "first byte of the range (>= 0)")
	f.Int64Var(&o.length, "length", 0, "bytes in the range (>= 0; 0 = to the end)")
	f.Int64Var(&o.startLine, "start-line", 0, "read whole lines from this line (1-based) instead of bytes")
	f.Int64Var(&o.lineCount, "line-count", 0, "lines to read with --start-line (default 100)")
	return cmd
}

// rehydrateJSON is the --json shape of rehydrate.
type rehydrateJSON struct {
	Outcome       hybridctx.Outcome      `json:"outcome"`
	Reason        hybridctx.Reason       `json:"reason"`
	Diagnostics   *hybridctx.Diagnostics `json:"diagnostics"`
	ContentBase64 *string                `json:"content_base64,omitempty"`
}

func (a *app) rehydrate(cmd *cobra.Command, ref string, o rehydrateFlags) error {
	if !cmd.Flags().Changed("budget") {
		return usagef("rehydrate needs --budget N (> 0)")
	}
	if o.budget <= 0 {
		return usagef("--budget must be > 0")
	}
	if o.offset < 0 || o.length < 0 {
		return usagef("--offset and --length must be >= 0")
	}
	if f := cmd.Flags(); f.Changed("start-line") || f.Changed("line-count") {
		return a.rehydrateLines(cmd, ref, o)
	}
	ctx, h, closeSession, err := a.hostRehydrator(cmd, nil)
	if err != nil {
		return err
	}
	defer closeSession()
	req := hybridctx.Request{Reference: ref, Budget: o.budget, Offset: o.offset, Length: o.length}
	if a.json {
		r, err := h.Rehydrate(ctx, req)
		if err != nil {
			return rehydrateError(err)
		}
		v := rehydrateJSON{Outcome: r.Outcome(), Reason: r.Reason(), Diagnostics: r.Diagnostics()}
		if r.Segment != nil {
			s := base64.StdEncoding.EncodeToString(r.Segment.Bytes())
			v.ContentBase64 = &s
		}
		if err := a.writeJSON(v); err != nil {
			return err
		}
		return outcomeExit(r.Outcome(), "")
	}
	r, err := h.RehydrateTo(ctx, req, a.env.Stdout)
	if err != nil {
		return rehydrateError(err)
	}
	return outcomeExit(r.Outcome(), categoricalLine(r))
}

// rehydrateLines is rehydrate --start-line: the lines view.
func (a *app) rehydrateLines(cmd *cobra.Command, ref string, o rehydrateFlags) error {
	f := cmd.Flags()
	switch {
	case f.Changed("offset") || f.Changed("length"):
		return usagef("--start-line/--line-count (lines) and --offset/--length (bytes) cannot be combined")
	case !f.Changed("start-line") || o.startLine < 1:
		return usagef("--start-line must be >= 1")
	case f.Changed("line-count") && o.lineCount < 1:
		return usagef("--line-count must be >= 1")
	}
	req := hybridctx.LinesRequest{Reference: ref, Budget: o.budget, StartLine: o.startLine, LineCount: o.lineCount}
	return a.view(cmd, nil, func(ctx context.Context, h *hybridctx.Rehydrator) (*hybridctx.Rehydration, error) {
		return h.ReadLines(ctx, req)
	})
}

// rehydrateError maps an error that stopped a rehydration before or during
// its decision.
func rehydrateError(err error) error {
	switch {
	case errors.Is(err, hybridctx.ErrInvalidRequest):
		return usagef("%v", err)
	case errors.Is(err, workspace.ErrChanged):
		return &exitError{code: ExitInternal, err: err,
			msg: "rehydrate: the stored body changed while it was read; do not trust the bytes written to standard output"}
	}
	return internal("rehydrate", err)
}

// Details of the categorical lines shared by rehydrate and stat.
const (
	detailInvalidReference = "expected artifact://sha256/ and 64 lowercase hex digits"
	detailUnauthorized     = "this owner has no record of the reference"
)

// categoricalLine is the standard-error line of an unresolved rehydration
// or view: outcome, reason and advice in this command's flags, never a run
// id, time, path or owner.
func categoricalLine(r *hybridctx.Rehydration) string {
	detail, ok := viewRefusalDetail(r)
	switch {
	case ok:
	case r.Outcome() == hybridctx.Resolved:
		return ""
	case r.Outcome() == hybridctx.InvalidReference:
		detail = detailInvalidReference
	case r.Outcome() == hybridctx.Unauthorized:
		detail = detailUnauthorized
	case r.Outcome() == hybridctx.Missing:
		detail = "the body is gone; offloading the same content again restores it"
	case r.Outcome() == hybridctx.OverBudget:
		budget := r.Diagnostics().ConfiguredBytes()
		detail = fmt.Sprintf("the range is %d bytes, the budget %d; use --offset/--length", r.Length, budget)
	case r.Outcome() == hybridctx.Stale:
		detail = "the stored body does not match its reference; nothing was released"
	}
	line := r.Outcome().String() + " (" + r.Reason().String() + ")"
	if detail != "" {
		line += ": " + detail
	}
	return line
}
