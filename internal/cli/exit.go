package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/hybridctx/hybridctx"
)

// Exit codes of the hybridctx command, the same with and without --json.
const (
	ExitOK               = 0  // inline, offloaded, existing_reference, resolved, clean verify
	ExitInternal         = 1  // unexpected internal or storage error
	ExitUsage            = 2  // bad flag or number, missing owner, unreadable input
	ExitInvalidReference = 3  // invalid_reference
	ExitUnauthorized     = 4  // unauthorized
	ExitMissing          = 5  // missing
	ExitOverBudget       = 6  // over_budget
	ExitStale            = 7  // stale
	ExitFailed           = 8  // failed
	ExitRecoveryRequired = 9  // recovery_required
	ExitDamage           = 10 // verify found damage
	ExitViewFailed       = 11 // view_failed

	ExitInterrupted = 130 // SIGINT (128+2): nothing decided, nothing left half-written
	ExitTerminated  = 143 // SIGTERM (128+15): the same
)

// exitTable is the single source of the exit-code documentation.
var exitTable = []struct {
	code    int
	meaning string
}{
	{ExitOK, "success: inline, offloaded, existing_reference, resolved, clean verify"},
	{ExitInternal, "unexpected internal or storage error, a workspace that cannot be\nopened, a body that changed while it was copied, interrupted"},
	{ExitUsage, "usage error: bad flag or number, unknown command, missing owner,\nunreadable input or events file, malformed --workspace URL\n(such as file://host/x)"},
	{ExitInvalidReference, "invalid_reference: not artifact://sha256/<64 lowercase hex>"},
	{ExitUnauthorized, "unauthorized: this owner has no record of the reference"},
	{ExitMissing, "missing: the record exists but its body is gone"},
	{ExitOverBudget, "over_budget: the requested range is larger than --budget"},
	{ExitStale, "stale: the stored body does not match its reference"},
	{ExitFailed, "failed: the result was not stored (too large, storage failure)"},
	{ExitRecoveryRequired, "recovery_required: stored but not registered; retry the content"},
	{ExitDamage, "verify found corrupt or missing bodies or unsafe permissions,\neven if repaired"},
	{ExitViewFailed, "view_failed: search or query could not answer (not JSON, the\nfilter failed, a time or memory limit)"},
	{ExitInterrupted, "interrupted by SIGINT (Ctrl-C): nothing was decided or reported,\nand nothing is left half-written"},
	{ExitTerminated, "terminated by SIGTERM: the same"},
}

// interrupted are the codes of a command a signal can stop.
var interrupted = []int{ExitInterrupted, ExitTerminated}

// commandExits lists the exit codes each command can return: its help
// shows those rows of exitTable, and the root help the whole table.
var commandExits = map[string][]int{
	"offload":   append([]int{ExitOK, ExitInternal, ExitUsage, ExitFailed, ExitRecoveryRequired}, interrupted...),
	"rehydrate": append(readExits(), interrupted...),
	"search":    append(readExits(), interrupted...),
	"query":     append(readExits(ExitViewFailed), interrupted...),
	"ls":        append([]int{ExitOK, ExitInternal, ExitUsage}, interrupted...),
	"stat":      append([]int{ExitOK, ExitInternal, ExitUsage, ExitInvalidReference, ExitUnauthorized}, interrupted...),
	"verify":    append([]int{ExitOK, ExitInternal, ExitUsage, ExitDamage}, interrupted...),
	"gc":        append([]int{ExitOK, ExitInternal, ExitUsage}, interrupted...),
	"mcp":       append([]int{ExitOK, ExitInternal, ExitUsage}, interrupted...),
	"ui":        {ExitOK, ExitInternal, ExitUsage},
	"demo":      append([]int{ExitOK, ExitInternal, ExitUsage}, interrupted...),
	"version":   {ExitOK, ExitInternal, ExitUsage},
}

// readExits are the codes of a rehydration (range, lines, search), plus
// extra.
func readExits(extra ...int) []int {
	return append([]int{ExitOK, ExitInternal, ExitUsage, ExitInvalidReference, ExitUnauthorized, ExitMissing,
		ExitOverBudget, ExitStale}, extra...)
}

// exitCodesHelp renders the rows of exitTable for codes, or the whole
// table when codes is nil.
func exitCodesHelp(codes []int) string {
	var b strings.Builder
	if codes == nil {
		b.WriteString("Exit codes of every command (the same with and without --json; each\ncommand's help lists those it can return):\n")
	} else {
		b.WriteString("Exit codes (the same with and without --json):\n")
	}
	for _, e := range exitTable {
		if codes == nil || slices.Contains(codes, e.code) {
			fmt.Fprintf(&b, "  %2d  %s\n", e.code, strings.ReplaceAll(e.meaning, "\n", "\n      "))
		}
	}
	return b.String()
}

// OutcomeExitCode returns the exit code of a library outcome. Every stored or
// resolved outcome is ExitOK; an unknown outcome is ExitInternal.
func OutcomeExitCode(o hybridctx.Outcome) int {
	switch o {
	case hybridctx.Inline, hybridctx.Offloaded, hybridctx.ExistingReference, hybridctx.Resolved:
		return ExitOK
	case hybridctx.InvalidReference:
		return ExitInvalidReference
	case hybridctx.Unauthorized:
		return ExitUnauthorized
	case hybridctx.Missing:
		return ExitMissing
	case hybridctx.OverBudget:
		return ExitOverBudget
	case hybridctx.Stale:
		return ExitStale
	case hybridctx.Failed:
		return ExitFailed
	case hybridctx.RecoveryRequired:
		return ExitRecoveryRequired
	case hybridctx.ViewFailed:
		return ExitViewFailed
	}
	return ExitInternal
}

// exitError ends a command with an exit code and an optional one-line
// message for standard error ("" prints nothing).
type exitError struct {
	code int
	msg  string
	err  error
	// category classifies exit-1 and exit-2 errors for --json; nil means
	// the usage category for exit 2 and the category of err for exit 1.
	category *errorCategory
}

func (e *exitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("exit status %d", e.code)
}

func (e *exitError) Unwrap() error { return e.err }

// usagef is a usage error (exit 2).
func usagef(format string, args ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, args...)}
}

// internal is an unexpected or storage error (exit 1) with context.
func internal(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &exitError{code: ExitInternal, msg: "interrupted", err: err}
	}
	return &exitError{code: ExitInternal, msg: what + ": " + errorCategoryOf(err).text, err: err}
}

// outcomeExit ends a command with the exit code of o; msg, when not empty,
// is the categorical line for standard error.
func outcomeExit(o hybridctx.Outcome, msg string) error {
	code := OutcomeExitCode(o)
	if code == ExitOK {
		return nil
	}
	return &exitError{code: code, msg: msg}
}

// exitCode maps the error a command tree returned to the exit code and the
// message to print. Commands return only *exitError (see app.run); any other
// error comes from argument parsing (an unknown command, a wrong number of
// arguments) and is a usage error.
func exitCode(err error) (int, string) {
	if err == nil {
		return ExitOK, ""
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, ee.msg
	}
	return ExitUsage, err.Error()
}

// oneLine folds s onto one line: control characters become spaces and runs
// of space collapse, so no message spans lines or carries escapes.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
