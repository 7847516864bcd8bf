package hybridctx

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/hybridctx/hybridctx/artifact"
)

// Storing a result whole.
//
// The whole-result bound counts what reaches the model: every stored part
// still leaves a notice (and, over MCP, a link) behind, so a result of
// thousands of small parts stays large after each part is decided. Such a
// result is stored as one JSON array of its parts, in their order, and the
// model sees one notice saying how many parts of which types it held and
// how to read part i. See docs/offload.md, "The whole-result bound".

// SendsOverResultBound reports whether a result that would send sent bytes
// to the model (inline parts, notices and links together) is over the
// whole-result bound, and so must be stored whole with StoreResult.
func (p Policy) SendsOverResultBound(sent int64) bool { return sent > p.ResultBound() }

// PartTypes are the part types a whole-result notice names; any other type
// counts as "other".
var PartTypes = []string{"text", "image", "audio", "resource", "resource_link"}

// StoreResult stores a whole result, the JSON array of its parts read from
// r, as one artifact whatever its size (a large one streamed, as
// OffloadReader does), and returns the decision with, for offloaded and
// existing_reference, the whole-result notice in place of the usual one:
// how many parts of each type in types (one entry per part, in order) the
// array holds and how to read part i with the query tool. Failures keep the
// categorical notice. The error is non-nil only when no decision was made.
func (o *Offloader) StoreResult(ctx context.Context, call Call, r io.Reader, types []string) (*OffloadResult, error) {
	if err := start(ctx, call); err != nil {
		return nil, err
	}
	limit := o.forTool(call.Tool).policy.InlineThreshold
	var head bytes.Buffer
	_, err := io.CopyN(&head, r, min(limit, 1<<30)+1) // nil: more than that, streamed
	var out *OffloadResult
	switch {
	case err == io.EOF:
		out, err = o.Store(ctx, call, head.Bytes())
	case err != nil:
		return nil, sourceError(err)
	default:
		out, err = o.OffloadReader(ctx, call, io.MultiReader(&head, r))
	}
	if err != nil {
		return nil, err
	}
	if oc := out.Outcome(); oc == Offloaded || oc == ExistingReference {
		size, _ := out.Diagnostics().ObservedBytes()
		out.Notice = wholeResultNotice(out.Ref, size, types, o.policy.ToolName(ViewQuery))
	}
	return out, nil
}

// wholeResultNotice renders the notice of a result stored whole. Like the
// stored notice it names the reference first, depends only on the body and
// the policy, and carries no content. Past MaxNoticeLen (a long query tool
// name, many types) the per-type counts are left out.
func wholeResultNotice(ref artifact.Ref, size int64, types []string, query string) string {
	counts := map[string]int{}
	for _, t := range types {
		if !isPartType(t) {
			t = "other"
		}
		counts[t]++
	}
	var byType strings.Builder
	for _, t := range append(PartTypes[:len(PartTypes):len(PartTypes)], "other") {
		if counts[t] > 0 {
			if byType.Len() > 0 {
				byType.WriteString(", ")
			}
			byType.WriteString(strconv.Itoa(counts[t]) + " " + t)
		}
	}
	render := func(byType string) string {
		var b strings.Builder
		b.WriteString(ref.String())
		b.WriteString("\n")
		b.WriteString(strconv.Itoa(len(types)))
		b.WriteString(" content blocks")
		if byType != "" {
			b.WriteString(" (" + byType + ")")
		}
		b.WriteString(", one JSON array of ")
		b.WriteString(strconv.FormatInt(size, 10))
		b.WriteString(" bytes; stored outside this conversation.\nBlock i: ")
		b.WriteString(query)
		b.WriteString(` {"reference": "`)
		b.WriteString(ref.String())
		b.WriteString(`", "filter": ".[i]"}; every text: ".[] | select(.type == \"text\") | .text".`)
		return b.String()
	}
	if n := render(byType.String()); len(n) <= MaxNoticeLen {
		return n
	}
	return render("")
}

func isPartType(t string) bool {
	for _, p := range PartTypes {
		if t == p {
			return true
		}
	}
	return false
}
