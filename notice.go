package hybridctx

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/hybridctx/hybridctx/artifact"
)

// MaxNoticeLen bounds every notice the model sees in place of a result.
const MaxNoticeLen = 500

// readWindow is the largest length the notice suggests for one read.
const readWindow = 65536

// storedNotice renders the three-line notice of an offloaded or existing
// result into buf, which it fills from the start, and returns it as a
// string that shares buf: buf must not change after. The notice depends
// only on the body and the policy, so it is byte-identical each time
// (prompt-cache stable).
func storedNotice(buf *[noticeBuf]byte, ref artifact.Ref, size, lines int64, kind, tool string) string {
	b := ref.AppendString(buf[:0])
	refText := b // the second reference copies the first: one hex encoding
	b = append(b, '\n')
	b = strconv.AppendInt(b, size, 10)
	b = append(b, " bytes, "...)
	b = strconv.AppendInt(b, lines, 10)
	b = append(b, " lines, "...)
	b = append(b, kind...)
	b = append(b, "; stored outside this conversation.\nRead it with "...)
	b = append(b, tool...)
	b = append(b, ` {"reference": "`...)
	b = append(b, refText...)
	b = append(b, `", "offset": 0, "length": `...)
	k := min(size, readWindow)
	b = strconv.AppendInt(b, k, 10)
	b = append(b, `, "max_bytes": `...)
	b = strconv.AppendInt(b, k, 10)
	b = append(b, "}."...)
	// noticeBuf has room for every notice; were it ever short, append would
	// have moved b to memory of its own, which nothing else holds either.
	return unsafe.String(&b[0], len(b))
}

// noticeBuf is room for every stored notice: two references, three numbers
// of at most 19 digits, the longest kind and read tool name (64 bytes), and
// the fixed words.
const noticeBuf = 2*artifact.RefLen + 3*19 + 6 + MaxReadToolNameLen + 160

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
