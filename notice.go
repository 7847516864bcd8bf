package hybridctx

import (
	"strconv"
	"strings"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/classify"
)

// MaxNoticeLen bounds every notice the model sees in place of a result.
const MaxNoticeLen = 500

// readWindow is the largest length the notice suggests for one read.
const readWindow = 65536

// The placeholders of the calls a notice shows: the values the model
// writes in.
const (
	patternPlaceholder = "<text to find>"
	filterPlaceholder  = "<jq filter>"
)

// shapePrefix begins line 4 of a JSON body's notice; the line, this prefix
// included, is at most classify.MaxShapeLen bytes.
const shapePrefix = "shape: "

// stored is what a stored notice says of its body.
type stored struct {
	ref         artifact.Ref
	size, lines int64
	kind        string
	shape       []byte // the outline of a JSON body, or nil
	tokens      int64  // the body's tokens with the policy's Tokenizer; 0 without
}

// storedNotice renders the notice of an offloaded or existing result. The
// notice depends only on the body and the policy, so it is byte-identical
// each time (prompt-cache stable), and it is at most MaxNoticeLen bytes:
//
//	artifact://sha256/<hex>
//	<N> bytes, [[≈]<T> tokens, ]<L> lines, <kind>; stored outside this conversation.
//	<the call that fits the kind>
//	shape: <outline>                     (json only)
//
// Line 3 shows the call to make first, with the policy's tool names: for
// text, search_artifact with a "pattern" to fill in, or read_artifact by
// lines (named without its arguments when the tool names are so long that
// the call would not fit); for JSON, query_artifact with a "filter" to fill
// in, and line 4 the document's outline, cut to the room left (shapeRoom);
// for binary, read_artifact's first byte range. Line 2 has the body's
// tokens when the policy has a Tokenizer (Policy.noticeTokens). See
// docs/offload.md, "The notice".
func storedNotice(f *stored, p Policy) string {
	var buf [noticeBuf]byte
	b := appendNoticeHead(buf[:0], f, p)
	if len(f.shape) > 0 && len(b)+1+len(shapePrefix)+len(f.shape) <= MaxNoticeLen {
		b = append(b, "\n"+shapePrefix...)
		b = append(b, f.shape...)
	}
	return string(b)
}

// appendNoticeHead appends the notice's first three lines; the token
// count only when they fit MaxNoticeLen with it (at the largest sizes and
// the longest tool names they may not).
func appendNoticeHead(b []byte, f *stored, p Policy) []byte {
	start := len(b)
	out := appendNoticeLines(b, f, p)
	if f.tokens > 0 && len(out)-start > MaxNoticeLen {
		g := *f
		g.tokens = 0
		return appendNoticeLines(out[:start], &g, p)
	}
	return out
}

// appendNoticeLines appends the notice's first three lines as f says.
func appendNoticeLines(b []byte, f *stored, p Policy) []byte {
	start := len(b)
	b = f.ref.AppendString(b)
	ref := b[start:] // the other references copy the first: one hex encoding
	b = append(b, '\n')
	b = strconv.AppendInt(b, f.size, 10)
	b = append(b, " bytes, "...)
	if f.tokens > 0 {
		if !p.noticeExact(f.size) {
			b = append(b, "≈"...)
		}
		b = strconv.AppendInt(b, f.tokens, 10)
		b = append(b, " tokens, "...)
	}
	b = strconv.AppendInt(b, f.lines, 10)
	b = append(b, " lines, "...)
	b = append(b, f.kind...)
	b = append(b, "; stored outside this conversation.\n"...)
	switch f.kind {
	case "text":
		b = append(b, "Search it with "...)
		b = append(b, p.ToolName(ViewSearch)...)
		b = append(b, ` {"reference": "`...)
		b = append(b, ref...)
		b = append(b, `", "pattern": "`+patternPlaceholder+`"} or read its lines with `...)
		b = append(b, p.ToolName(ViewLines)...)
		const args = ` {"reference": "", "start_line": 1, "line_count": 100}.`
		if len(b)-start+len(args)+len(ref) > MaxNoticeLen {
			return append(b, '.')
		}
		b = append(b, ` {"reference": "`...)
		b = append(b, ref...)
		return append(b, `", "start_line": 1, "line_count": 100}.`...)
	case "json":
		b = append(b, "Query it with "...)
		b = append(b, p.ToolName(ViewQuery)...)
		b = append(b, ` {"reference": "`...)
		b = append(b, ref...)
		return append(b, `", "filter": "`+filterPlaceholder+`"}.`...)
	}
	b = append(b, "Read it with "...)
	b = append(b, p.ToolName(ViewRange)...)
	b = append(b, ` {"reference": "`...)
	b = append(b, ref...)
	b = append(b, `", "offset": 0, "length": `...)
	k := min(f.size, readWindow)
	b = strconv.AppendInt(b, k, 10)
	b = append(b, `, "max_bytes": `...)
	b = strconv.AppendInt(b, k, 10)
	return append(b, "}."...)
}

// shapeRoom returns how many bytes the outline of a JSON body may take on
// line 4 of its notice: what the first three lines leave of MaxNoticeLen,
// with the whole line at most classify.MaxShapeLen bytes.
func shapeRoom(f *stored, p Policy) int {
	var buf [noticeBuf]byte
	head := appendNoticeHead(buf[:0], f, p)
	return min(MaxNoticeLen-len(head)-1, classify.MaxShapeLen) - len(shapePrefix)
}

// noticeBuf is room for every stored notice.
const noticeBuf = MaxNoticeLen

// The mask a history budget leaves in place of a result is rendered next
// to the parser that reads it back: renderMask in history_mask.go.

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
