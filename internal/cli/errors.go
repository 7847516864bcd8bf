package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/hybridctx/hybridctx/agent/loop"
	"github.com/hybridctx/hybridctx/backend"
	"github.com/hybridctx/hybridctx/workspace"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// errorCategory is what an exit-1 or exit-2 line says about its cause: a
// code for --json and a few words for people. Raw driver, database or OS
// text never reaches a line; it may name table rows, hosts or paths the
// operator did not give.
type errorCategory struct {
	code string
	text string
}

// Categories of errors, in the order errorCategoryOf tries them; the last
// is the default.
var (
	catUsage       = errorCategory{"usage", "usage error"}
	catInterrupted = errorCategory{"interrupted", "interrupted"}
	catNoWorkspace = errorCategory{"no_workspace", "no workspace"}
	catDamaged     = errorCategory{"database_damaged", "the workspace database is damaged; run hybridctx verify"}
	catWALDeleted  = errorCategory{"database_wal_deleted", "the records database's write-ahead log records.db-wal was deleted " +
		"while a process had the database open; let every process using this workspace exit normally " +
		"(the last one writes its records back), then retry"}
	catChanged      = errorCategory{"body_changed", "the stored body changed while it was read"}
	catPermission   = errorCategory{"permission_denied", "permission denied"}
	catNoSpace      = errorCategory{"no_space", "no space left on the device"}
	catReadOnly     = errorCategory{"read_only", "the file system is read-only"}
	catBusy         = errorCategory{"database_busy", "the workspace database stayed locked by another process"}
	catDatabaseIO   = errorCategory{"database_io_error", "the workspace database could not be read or written; run hybridctx verify"}
	catUnsupported  = errorCategory{"unsupported", "the workspace backend does not support this"}
	catUnavailable  = errorCategory{"unavailable", "the workspace backend is not available (check its address and credentials)"}
	catNotBuilt     = errorCategory{"unavailable", "this workspace backend is not available in this build"}
	catSchema       = errorCategory{"schema", "the workspace database holds a schema this build cannot use"}
	catStorageError = errorCategory{"storage_error", "storage error"}
	catInternal     = errorCategory{"internal", "internal error"}
)

// verifyCannotOpen is what verify says when the records database cannot
// be read at all, where the categories' advice would send it to itself.
const verifyCannotOpen = "the workspace database cannot be read, so verify cannot check the workspace; " +
	"restore records.db from a backup, or move the workspace aside and start a new one"

// errorCategories lists every category once, for the help.
var errorCategories = []errorCategory{catUsage, catInterrupted, catNoWorkspace, catDamaged, catWALDeleted, catChanged,
	catPermission, catNoSpace, catReadOnly, catBusy, catDatabaseIO, catUnsupported, catUnavailable,
	catSchema, catStorageError, catInternal}

// errorCodesHelp renders the error codes of --json for the root help.
func errorCodesHelp() string {
	var b strings.Builder
	b.WriteString("Error codes of --json:")
	seen := map[string]bool{}
	width := b.Len()
	for _, c := range errorCategories {
		if seen[c.code] {
			continue
		}
		seen[c.code] = true
		if width+1+len(c.code) > 76 {
			b.WriteString("\n ")
			width = 1
		}
		b.WriteString(" " + c.code)
		width += 1 + len(c.code)
	}
	b.WriteByte('\n')
	return b.String()
}

// errorCategoryOf classifies err: by the context and the agent loop's own
// errors, by the backend selector's, and otherwise by the portable
// category a driver marked it with (docs/workspace.md, "Error
// categories"); an error no driver produced (a file the command reads or
// writes) is categorised by its operating-system cause the same way.
func errorCategoryOf(err error) errorCategory {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return catInterrupted
	case errors.Is(err, loop.ErrInvariant), errors.Is(err, loop.ErrNoReference), errors.Is(err, loop.ErrScriptEnded):
		// The agent loop's own checks and scripts: never storage.
		return catInternal
	case errors.Is(err, backend.ErrNoWorkspace):
		return catNoWorkspace
	case errors.Is(err, backend.ErrNotBuilt):
		return catNotBuilt
	case errors.Is(err, workspace.ErrChanged):
		return catChanged
	case errors.Is(err, errors.ErrUnsupported):
		return catUnsupported
	}
	if driver.Category(err) == nil {
		err = driver.FromOS(err)
	}
	switch {
	case errors.Is(err, driver.ErrUnavailable):
		return catUnavailable
	case errors.Is(err, driver.ErrIncompatible):
		return catSchema
	case errors.Is(err, driver.ErrDetached):
		return catWALDeleted
	case errors.Is(err, driver.ErrDamaged):
		return catDamaged
	case errors.Is(err, driver.ErrPermission):
		return catPermission
	case errors.Is(err, driver.ErrNoSpace):
		return catNoSpace
	case errors.Is(err, driver.ErrReadOnly):
		return catReadOnly
	case errors.Is(err, driver.ErrBusy):
		return catBusy
	case errors.Is(err, driver.ErrIO):
		return catDatabaseIO
	}
	return catStorageError
}

// errorJSON is the --json shape of an exit-1 or exit-2 error, printed on
// standard output (the one line on standard error stays).
type errorJSON struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// categoryOfExit returns the category of an error a command tree returned
// with exit code 1 or 2.
func categoryOfExit(err error, code int) errorCategory {
	var ee *exitError
	switch {
	case errors.As(err, &ee) && ee.category != nil:
		return *ee.category
	case code == ExitUsage:
		return catUsage
	case ee != nil && ee.err != nil:
		return errorCategoryOf(ee.err)
	}
	return catInternal
}

// writeErrorJSON prints the --json error object of a failed command.
func (a *app) writeErrorJSON(err error, code int, msg string) {
	var v errorJSON
	v.Error.Code = categoryOfExit(err, code).code
	v.Error.Message = oneLine(msg)
	_ = a.writeJSON(v)
}
