// Package viewengine holds the engines of the targeted views (see
// docs/rehydration.md): the line scanner, the search matcher and the jq
// sandbox. Each engine is a Scanner: it sees a body's chunks in order while
// they are hashed and answers once the digest verified. The root package's
// Rehydrator methods (ReadLines, Search, Query) are its only users; they
// validate the requests and turn an Answer into a decision.
package viewengine

import "context"

// Outcome is how a view ended.
type Outcome uint8

// The outcomes of a view.
const (
	// Resolved: Answer.Body is the answer.
	Resolved Outcome = iota
	// OverBudget: not even the smallest answer fits the budget; Observed
	// is its size.
	OverBudget
	// Failed: the view could not run to its end; Answer.Failure says why.
	Failed
)

// Failure is why a view failed.
type Failure uint8

// The failures of a view (query only).
const (
	// NoFailure is the Failure of an answer that did not fail.
	NoFailure Failure = iota
	// LimitExceeded: the body or the filter's run is over a limit.
	LimitExceeded
	// NotJSON: the body is not JSON.
	NotJSON
	// FilterError: the filter stopped with an error.
	FilterError
)

// Page describes an answer: what it shows and where to continue. Its
// fields are those of the root package's Page, which documents them.
type Page struct {
	Total, First, Count, Next int64
	LineOffset, LineLength    int64
	ItemBytes                 int64
	Summary                   string
}

// Answer is what a view made of a verified body.
type Answer struct {
	Outcome  Outcome
	Failure  Failure
	Body     []byte
	Offset   int64 // body offset of the answer (lines), else 0
	Observed int64 // size of the answer, or of the smallest one over budget
	Page     Page
}

// Scanner turns a body into an answer: Scan sees every chunk in order
// (before verification; it keeps at most its bound), Answer runs once, when
// the digest verified.
type Scanner interface {
	Scan(off int64, b []byte) error
	Answer(ctx context.Context, size int64) Answer
}
