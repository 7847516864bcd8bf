package readtools

import (
	"errors"
	"strconv"
	"strings"

	"github.com/hybridctx/hybridctx"
)

// Every text the model reads about the read tools lives in this file:
// descriptions, schemas, continuation notes and refusals. Refusals are
// categorical: outcome, reason, numbers and what to do next; never content,
// a path, an owner or raw error text.

const refProperty = `"reference":{"type":"string","description":"artifact://sha256/<64 lowercase hex>, the first line of the notice","pattern":"^artifact://sha256/[0-9a-f]{64}$"}`

func maxBytesProperty(cap int64) string {
	return `"max_bytes":{"type":"integer","minimum":1,"description":"most bytes to return (default and cap ` + itoa(cap) + `)"}`
}

func schema(props ...string) []byte {
	return []byte(`{"type":"object","properties":{` + strings.Join(props[:len(props)-1], ",") +
		`},"required":` + props[len(props)-1] + `,"additionalProperties":false}`)
}

func readSchema(cap int64) []byte {
	return schema(refProperty,
		`"offset":{"type":"integer","minimum":0,"description":"first byte to read (default 0)"}`,
		`"length":{"type":"integer","minimum":0,"description":"bytes to read; 0 or absent reads to the end"}`,
		`"start_line":{"type":"integer","minimum":1,"description":"read whole lines instead of bytes, from this line (1-based); not with offset/length"}`,
		`"line_count":{"type":"integer","minimum":1,"description":"lines to read from start_line (default `+itoa(hybridctx.DefaultLineCount)+`)"}`,
		maxBytesProperty(cap), `["reference"]`)
}

func searchSchema(cap int64) []byte {
	return schema(refProperty,
		`"pattern":{"type":"string","minLength":1,"maxLength":`+itoa(hybridctx.MaxPatternBytes)+`,"description":"text to find in each line; a Go RE2 regular expression when regex is true"}`,
		`"regex":{"type":"boolean","description":"treat pattern as RE2 syntax (default false: literal)"}`,
		`"ignore_case":{"type":"boolean","description":"match regardless of case (default false)"}`,
		`"context_lines":{"type":"integer","minimum":0,"maximum":`+itoa(hybridctx.MaxContextLines)+`,"description":"lines shown before and after each match (default 0)"}`,
		`"max_matches":{"type":"integer","minimum":1,"description":"most matching lines shown (default `+itoa(hybridctx.DefaultMaxMatches)+`)"}`,
		`"skip":{"type":"integer","minimum":0,"description":"matches passed over, to see the next page (default 0)"}`,
		maxBytesProperty(cap), `["reference","pattern"]`)
}

func querySchema(cap int64) []byte {
	return schema(refProperty,
		`"filter":{"type":"string","minLength":1,"maxLength":`+itoa(hybridctx.MaxFilterBytes)+`,"description":"a jq filter, such as .items[0].name or .[] | select(.status == \"failed\")"}`,
		`"skip":{"type":"integer","minimum":0,"description":"results passed over, to see the next page (default 0)"}`,
		maxBytesProperty(cap), `["reference","filter"]`)
}

func readDescription(cap int64) string {
	return "Read a tool result that was stored outside this conversation, by the reference its notice starts with. " +
		"Either a byte range (offset, length; length 0 or absent reads to the end) or whole lines (start_line, line_count). " +
		"Returns the exact bytes, at most max_bytes (at most " + itoa(cap) + "); a byte range larger than that is refused, " +
		"so read large results in parts, and a lines read returns as many whole lines as fit and says where to continue."
}

func searchDescription(cap int64, read string) string {
	return "Find the lines of a stored tool result that contain a text (or match a regular expression), " +
		"without reading it whole. The answer lists them like grep -n (\"<line>:<text>\", context lines as \"<line>-<text>\"), " +
		"then a summary line \"<M> matches (showing <a>-<b>)\" that counts every match and, when more remain, gives the skip to continue with. " +
		"Lines over " + itoa(hybridctx.SearchLineBytes) + " bytes are cut around the match, with their byte offset. At most max_bytes (at most " + itoa(cap) + "). " +
		"Read around a match with " + read + " and start_line."
}

func queryDescription(cap int64, search string) string {
	return "Run a jq filter over a stored JSON tool result and return its results as compact JSON, one per line, " +
		"then a summary line \"<M> results (showing <a>-<b>)\" with the skip to continue with when more remain. " +
		"The filter sees only the document: no environment, input or I/O, a " + hybridctx.DefaultQueryTimeout.String() + " time limit and a memory bound. " +
		"At most max_bytes (at most " + itoa(cap) + "). For text that is not JSON, use " + search + "."
}

// Refusal returns the categorical text the model reads for an unresolved
// decision made under budget.
func (s *Set) Refusal(rh *hybridctx.Rehydration, budget int64) string {
	head := "hybridctx: " + rh.Outcome().String() + " (" + rh.Reason().String() + "): "
	b := itoa(budget)
	switch rh.Outcome() {
	case hybridctx.OverBudget:
		return head + s.overBudget(rh, b)
	case hybridctx.Unauthorized:
		return head + "no artifact with this reference belongs to this conversation."
	case hybridctx.Missing:
		return head + "the artifact's body is no longer stored; run the tool that produced it again."
	case hybridctx.Stale:
		return head + "the stored body no longer matches its reference; nothing was returned; run the tool that produced it again."
	case hybridctx.InvalidReference:
		return head + "a reference is artifact://sha256/ followed by 64 lowercase hex digits, the first line of the notice."
	case hybridctx.ViewFailed:
		return head + s.viewFailed(rh)
	}
	return head + "the artifact cannot be read."
}

func (s *Set) overBudget(rh *hybridctx.Rehydration, b string) string {
	read := s.tools[0].Name
	switch rh.View() {
	case hybridctx.ViewLines:
		p := rh.Page
		return "line " + itoa(p.First) + " alone is " + itoa(p.LineLength) + " bytes, more than the budget " + b +
			"; read it by byte range with " + read + " offset " + itoa(p.LineOffset) + " and length at most " + b + "."
	case hybridctx.ViewSearch:
		return "the first match to show, with its context and the summary line, is more than the budget " + b +
			"; use fewer context_lines, or a larger max_bytes (at most " + itoa(s.cap) + ")."
	case hybridctx.ViewQuery:
		return "the first result to show is more than the budget " + b +
			"; narrow the filter (pick fields, or slice arrays such as .[0:10]), or a larger max_bytes (at most " + itoa(s.cap) + ")."
	}
	return "the range is " + itoa(rh.Length) + " bytes, the budget " + b +
		"; use " + read + " with offset/length to read at most " + b + " bytes at a time (the body is " + itoa(rh.BodySize) + " bytes)."
}

func (s *Set) viewFailed(rh *hybridctx.Rehydration) string {
	switch rh.Reason() {
	case hybridctx.NotJSON:
		return "the stored result is not JSON; use " + s.tools[1].Name + " or " + s.tools[0].Name + "."
	case hybridctx.FilterError:
		return "the filter failed on this document (for example, indexing a value of another type); " +
			"look at its shape first with a filter such as 'type', 'keys' or '.[0]'."
	case hybridctx.Busy:
		return "too many queries are running at once; try again shortly, or use " + s.tools[1].Name + "."
	}
	return "the filter exceeded its time or memory limit, or the result is too large to query; " +
		"narrow the filter, or use " + s.tools[1].Name + "."
}

// linesNote says where a lines read that stopped early continues; "" when
// it returned every line asked for.
func (s *Set) linesNote(rh *hybridctx.Rehydration) string {
	p := rh.Page
	if p.Next == 0 {
		return ""
	}
	return "[hybridctx: lines " + itoa(p.First) + "-" + itoa(p.Next-1) + " of " + itoa(p.Total) +
		" shown (the budget is full); continue with start_line " + itoa(p.Next) + "]"
}

// requestDetail is the rule an invalid request broke, without the
// package's prefix.
func requestDetail(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, hybridctx.ErrInvalidRequest.Error()+": "); i >= 0 {
		return msg[i+len(hybridctx.ErrInvalidRequest.Error())+2:]
	}
	if errors.Is(err, hybridctx.ErrInvalidRequest) {
		return "the request is not valid"
	}
	return msg
}

func itoa[T ~int | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }
