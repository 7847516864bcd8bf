package hybridctx

import (
	"strconv"
	"strings"

	"github.com/hybridctx/hybridctx/artifact"
)

// MaxMaskLen bounds the mask that replaces a tool result when a history is
// over its budget: the reference on the first line, then the size, kind and
// the read tools to use. See docs/history.md, "Masking one result".
const MaxMaskLen = 160

// maskWord marks line 2 of a mask, after the size, lines and kind.
const maskWord = "; masked. Read with "

// renderMask renders the mask of a stored body: the reference, then
// "<N> bytes, <L> lines, <kind>; masked. Read with <tools>", the tools
// that fit the kind (the search or query tool first, then the read tool),
// as many as fit in MaxMaskLen. offset >= 0 marks the mask of a recovered
// segment: "<N> bytes at offset <O>" and only the read tool, which returns
// those bytes exactly. It depends only on its arguments, so a history masks
// to the same bytes each time (prompt-cache stable, idempotent).
//
// It is the one definition of the mask; notice.go renders the notice.
func renderMask(p Policy, ref artifact.Ref, size, lines, offset int64, kind string) string {
	b := make([]byte, 0, MaxMaskLen)
	b = ref.AppendString(b)
	b = append(b, '\n')
	b = strconv.AppendInt(b, size, 10)
	var tools []string
	if offset >= 0 {
		b = append(b, " bytes at offset "...)
		b = strconv.AppendInt(b, offset, 10)
		tools = []string{p.ToolName(ViewRange)}
	} else {
		b = append(b, " bytes, "...)
		b = strconv.AppendInt(b, lines, 10)
		b = append(b, " lines"...)
		switch kind {
		case "json":
			tools = []string{p.ToolName(ViewQuery), p.ToolName(ViewRange)}
		case "text":
			tools = []string{p.ToolName(ViewSearch), p.ToolName(ViewRange)}
		default:
			tools = []string{p.ToolName(ViewRange)}
		}
	}
	b = append(b, ", "...)
	b = append(b, kind...)
	if len(b)+len(maskWord)+len(tools[0]) > MaxMaskLen {
		return string(b)
	}
	b = append(b, maskWord...)
	for i, t := range tools {
		sep := 0
		if i > 0 {
			sep = 2
		}
		if len(b)+sep+len(t) > MaxMaskLen {
			break
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, t...)
	}
	b = append(b, '.')
	if len(b) > MaxMaskLen {
		b = b[:len(b)-1]
	}
	return string(b)
}

// StoredText describes a tool message that holds a notice or a mask rather
// than a result: what ParseStoredText read from its first two lines.
type StoredText struct {
	// Ref is the reference on the first line.
	Ref artifact.Ref
	// Size is the stored body's size, or for a recovered segment's mask the
	// segment's length; Lines and Kind as the notice gives them (Lines is 0
	// for a segment's mask).
	Size, Lines int64
	Kind        string
	// Masked is true for a mask, false for a notice.
	Masked bool
	// Offset is where a recovered segment's mask points in the body; -1
	// for every other text.
	Offset int64
}

// ParseStoredText reports whether text is a notice of a stored result (docs/offload.md)
// or a mask, and what it says: its first line is a canonical reference and
// its second begins "<N> bytes, <L> lines, <kind>" ("<N> bytes, <T> tokens,
// <L> lines, <kind>", or "≈<T> tokens", under a policy with a Tokenizer; or, for the mask of a
// recovered segment, "<N> bytes at offset <O>, <kind>"). Adapters use it to
// tell a text that may be a notice from an inline result in a history they
// did not build. It reads the text only: whether a text is the notice of a
// body the owner holds is the Compactor's check (docs/history.md, "Notices
// and masks in a history").
func ParseStoredText(text string) (StoredText, bool) {
	if len(text) < artifact.RefLen+1 || text[artifact.RefLen] != '\n' {
		return StoredText{}, false
	}
	ref, err := artifact.ParseRef(text[:artifact.RefLen])
	if err != nil {
		return StoredText{}, false
	}
	line := text[artifact.RefLen+1:]
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	st := StoredText{Ref: ref, Offset: -1}
	var ok bool
	if st.Size, line, ok = leadingInt(line); !ok {
		return StoredText{}, false
	}
	switch {
	case strings.HasPrefix(line, " bytes at offset "):
		if st.Offset, line, ok = leadingInt(line[len(" bytes at offset "):]); !ok {
			return StoredText{}, false
		}
		st.Masked = true
	case strings.HasPrefix(line, " bytes, "):
		line = line[len(" bytes, "):]
		// A policy with a Tokenizer: "<T> tokens, " or "≈<T> tokens, ".
		if _, rest, ok := leadingInt(strings.TrimPrefix(line, "≈")); ok && strings.HasPrefix(rest, " tokens, ") {
			line = rest[len(" tokens, "):]
		} else if strings.HasPrefix(line, "≈") {
			return StoredText{}, false
		}
		if st.Lines, line, ok = leadingInt(line); !ok || !strings.HasPrefix(line, " lines") {
			return StoredText{}, false
		}
		line = line[len(" lines"):]
	default:
		return StoredText{}, false
	}
	if !strings.HasPrefix(line, ", ") {
		return StoredText{}, false
	}
	line = line[2:]
	for _, k := range []string{"json", "text", "binary"} {
		if strings.HasPrefix(line, k) {
			st.Kind, line = k, line[len(k):]
			break
		}
	}
	if st.Kind == "" {
		return StoredText{}, false
	}
	if line == "" || strings.HasPrefix(line, maskWord) {
		st.Masked = true
	} else if st.Offset >= 0 || line[0] != ';' {
		return StoredText{}, false
	}
	return st, true
}

// leadingInt reads the decimal number s begins with.
func leadingInt(s string) (int64, string, bool) {
	i := 0
	for i < len(s) && i < 19 && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	return n, s[i:], err == nil
}
