package cli

import (
	"fmt"

	"github.com/hybridctx/hybridctx"
)

// What the command line says about a view besides its answer. The read
// tools keep the summary line in their answers and name tool arguments
// (readtools); here the answer's items go to standard output alone, so
// the output pipes into grep or jq, and these lines go to standard error,
// naming this command's flags. See docs/cli.md, "Output of the views".

// viewItems returns what a resolved view prints on standard output: the
// exact bytes of a lines read, the items of a search or query answer
// without its summary line.
func viewItems(r *hybridctx.Rehydration) []byte {
	if r.Segment == nil {
		return nil
	}
	b := r.Segment.Bytes()
	if v := r.View(); v == hybridctx.ViewSearch || v == hybridctx.ViewQuery {
		b = b[:min(max(r.Page.ItemBytes, 0), int64(len(b)))]
	}
	return b
}

// viewNote is the standard-error line of a resolved view, "" for none: the
// summary of a search or query and the --skip to continue with; for a
// lines read, where the budget stopped it (the --start-line to continue
// with), or that --start-line is past the end.
func viewNote(r *hybridctx.Rehydration) string {
	p := r.Page
	switch r.View() {
	case hybridctx.ViewSearch, hybridctx.ViewQuery:
		if p.Next > 0 {
			return fmt.Sprintf("%s; continue with --skip %d", p.Summary, p.Next)
		}
		return p.Summary
	case hybridctx.ViewLines:
		switch {
		case p.Next > 0:
			return fmt.Sprintf("lines %d-%d of %d shown (the budget is full); continue with --start-line %d",
				p.First, p.Next-1, p.Total, p.Next)
		case p.Count == 0 && p.First > p.Total:
			return fmt.Sprintf("--start-line %d is past the end: the body has %d %s", p.First, p.Total, plural(p.Total, "line"))
		}
	}
	return ""
}

// viewRefusalDetail says, for an over_budget lines, search or query view
// or a view_failed one, what to do instead, in this command's flags; ok
// is false for anything else.
func viewRefusalDetail(r *hybridctx.Rehydration) (detail string, ok bool) {
	budget := r.Diagnostics().ConfiguredBytes()
	p := r.Page
	switch {
	case r.Outcome() == hybridctx.OverBudget && r.View() == hybridctx.ViewLines:
		return fmt.Sprintf("line %d alone is %d bytes, more than --budget %d; read it by byte range with --offset %d and --length at most %d",
			p.First, p.LineLength, budget, p.LineOffset, budget), true
	case r.Outcome() == hybridctx.OverBudget && r.View() == hybridctx.ViewSearch:
		return fmt.Sprintf("the first match to show, with its context, is more than --budget %d; use a smaller --context or a larger --budget", budget), true
	case r.Outcome() == hybridctx.OverBudget && r.View() == hybridctx.ViewQuery:
		return fmt.Sprintf("the first result to show is more than --budget %d; narrow the filter (pick fields, or slice arrays such as .[0:10]) or use a larger --budget", budget), true
	case r.Outcome() != hybridctx.ViewFailed:
		return "", false
	}
	switch r.Reason() {
	case hybridctx.NotJSON:
		return "the stored result is not JSON; use hybridctx search, or rehydrate with --start-line", true
	case hybridctx.FilterError:
		return "the filter failed on this document (for example, indexing a value of another type); " +
			"look at its shape first with a filter such as 'type', 'keys' or '.[0]'", true
	}
	return "the filter exceeded its time or memory limit, or the result is larger than --query-max-bytes; " +
		"narrow the filter, or use hybridctx search", true
}

// plural returns noun, with an s unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
