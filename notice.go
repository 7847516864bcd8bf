package hybridctx

import (
	"strconv"
	"strings"

	"github.com/hybridctx/hybridctx/artifact"
)

// MaxNoticeLen bounds every notice the model sees in place of a result.
const MaxNoticeLen = 500

// readWindow is the largest length the notice suggests for one read.
const readWindow = 65536

// storedNotice renders the three-line notice of an offloaded or existing
// result. It depends only on the body and the policy, so it is byte-identical
// each time (prompt-cache stable).
func storedNotice(ref artifact.Ref, size, lines int64, kind, tool string) string {
	refText := ref.String()
	k := strconv.FormatInt(min(size, readWindow), 10)
	var b strings.Builder
	b.Grow(320)
	b.WriteString(refText)
	b.WriteByte('\n')
	b.WriteString(strconv.FormatInt(size, 10))
	b.WriteString(" bytes, ")
	b.WriteString(strconv.FormatInt(lines, 10))
	b.WriteString(" lines, ")
	b.WriteString(kind)
	b.WriteString("; stored outside this conversation.\nRead it with ")
	b.WriteString(tool)
	b.WriteString(` {"reference": "`)
	b.WriteString(refText)
	b.WriteString(`", "offset": 0, "length": `)
	b.WriteString(k)
	b.WriteString(`, "max_bytes": `)
	b.WriteString(k)
	b.WriteString("}.")
	return b.String()
}

// failureAdvice is the one line of advice after a categorical failure.
var failureAdvice = map[Reason]string{
	NoAuthorizedWorkspace:  "The result was too large to show and no workspace is configured to keep it.",
	ExceedsMaxArtifactSize: "The result is larger than the workspace accepts; ask for a smaller part of it.",
	WorkspaceWriteFailed:   "The result could not be stored; the call may be retried.",
	WorkspaceReadFailed:    "The stored result could not be checked; the call may be retried.",
	CanceledAfterWrite:     "The result was stored but not registered; retry the call to get its reference.",
	RecordCommitFailed:     "The result was stored but not registered; retry the call to get its reference.",
}

// failureNotice renders the categorical notice of failed and
// recovery_required: no path, digest, owner, tool, call id or error text.
func failureNotice(o Outcome, r Reason, observed int64) string {
	var b strings.Builder
	b.WriteString("hybridctx: ")
	b.WriteString(o.String())
	b.WriteString(" (")
	b.WriteString(r.String())
	b.WriteString("), ")
	b.WriteString(strconv.FormatInt(observed, 10))
	b.WriteString(" bytes")
	if a := failureAdvice[r]; a != "" {
		b.WriteByte('\n')
		b.WriteString(a)
	}
	return b.String()
}
