package hybridctx

import "fmt"

// Operation names the kind of decision a Diagnostics describes.
type Operation uint8

// The two operations.
const (
	OpOffload Operation = iota + 1
	OpRehydration
)

// Outcome is the categorical result of one decision.
type Outcome uint8

// Offload outcomes, then rehydration outcomes.
const (
	Inline Outcome = iota + 1
	Offloaded
	ExistingReference
	Failed
	RecoveryRequired
	Resolved
	Stale
	Missing
	Unauthorized
	OverBudget
	InvalidReference
	// ViewFailed means a view (lines, search, query) could not turn a
	// verified body into an answer (docs/rehydration.md).
	ViewFailed
)

// Content says what kind of bytes a decision was about.
type Content uint8

// The two content kinds.
const (
	ToolResult Content = iota + 1
	RecoveredContext
)

// Reason is the categorical cause of an outcome, assigned where the decision
// is made and never derived from error text.
type Reason uint8

// Offload reasons, then rehydration reasons.
const (
	BelowThreshold Reason = iota + 1
	RecoveredSegmentBypass
	ThresholdExceeded
	ReplacedCorruptBody
	ExistingContentMatch
	NoAuthorizedWorkspace
	ExceedsMaxArtifactSize
	WorkspaceWriteFailed
	WorkspaceReadFailed
	CanceledAfterWrite
	RecordCommitFailed
	DigestVerified
	DigestMismatch
	BodyMissing
	OwnerMismatch
	BudgetExceeded
	MalformedReference
	// NotJSON: a query view over a body that is not JSON.
	NotJSON
	// FilterError: a query filter failed while running.
	FilterError
	// LimitExceeded: a view hit its time or memory bound.
	LimitExceeded
	// HistoryBudget: a history over its budget masked the result (see
	// docs/history.md). Valid for offloaded and existing_reference.
	HistoryBudget
	// Busy: a query view found every query slot of its QueryLimiter taken
	// for longer than the limiter's wait (docs/rehydration.md).
	Busy
	// ToolArgument: a verified body handed to a tool as an argument in
	// place of its reference (docs/gateway.md). Valid for resolved.
	ToolArgument
)

// View says what a rehydration turned the verified body into (docs/rehydration.md). Every
// rehydration has one; offload decisions have none (0).
type View uint8

// The views.
const (
	// ViewRange returns a byte range, exactly.
	ViewRange View = iota + 1
	// ViewLines returns whole lines, exactly.
	ViewLines
	// ViewSearch returns the lines matching a pattern, grep -n style.
	ViewSearch
	// ViewQuery returns the results of a jq filter over a JSON body.
	ViewQuery
)

var viewNames = [...]string{ViewRange: "range", ViewLines: "lines", ViewSearch: "search", ViewQuery: "query"}

func (v View) String() string { return name(viewNames[:], uint8(v), "view") }

// MarshalText implements encoding.TextMarshaler with the snake_case name.
func (v View) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

func (v View) valid() bool { return v >= ViewRange && v <= ViewQuery }

var opNames = [...]string{OpOffload: "offload", OpRehydration: "rehydration"}

var outcomeNames = [...]string{
	Inline: "inline", Offloaded: "offloaded", ExistingReference: "existing_reference",
	Failed: "failed", RecoveryRequired: "recovery_required", Resolved: "resolved",
	Stale: "stale", Missing: "missing", Unauthorized: "unauthorized",
	OverBudget: "over_budget", InvalidReference: "invalid_reference", ViewFailed: "view_failed",
}

var contentNames = [...]string{ToolResult: "tool_result", RecoveredContext: "recovered_context"}

var reasonNames = [...]string{
	BelowThreshold: "below_threshold", RecoveredSegmentBypass: "recovered_segment_bypass",
	ThresholdExceeded: "threshold_exceeded", ReplacedCorruptBody: "replaced_corrupt_body",
	ExistingContentMatch: "existing_content_match", NoAuthorizedWorkspace: "no_authorized_workspace",
	ExceedsMaxArtifactSize: "exceeds_max_artifact_size", WorkspaceWriteFailed: "workspace_write_failed",
	WorkspaceReadFailed: "workspace_read_failed", CanceledAfterWrite: "canceled_after_write",
	RecordCommitFailed: "record_commit_failed", DigestVerified: "digest_verified",
	DigestMismatch: "digest_mismatch", BodyMissing: "body_missing", OwnerMismatch: "owner_mismatch",
	BudgetExceeded: "budget_exceeded", MalformedReference: "malformed_reference",
	NotJSON: "not_json", FilterError: "filter_error", LimitExceeded: "limit_exceeded",
	HistoryBudget: "history_budget", Busy: "busy", ToolArgument: "tool_argument",
}

func name(names []string, v uint8, kind string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, v)
}

func (o Operation) String() string { return name(opNames[:], uint8(o), "operation") }
func (o Outcome) String() string   { return name(outcomeNames[:], uint8(o), "outcome") }
func (c Content) String() string   { return name(contentNames[:], uint8(c), "content") }
func (r Reason) String() string    { return name(reasonNames[:], uint8(r), "reason") }

// MarshalText implements encoding.TextMarshaler with the snake_case name.
func (o Operation) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// MarshalText implements encoding.TextMarshaler with the snake_case name.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// MarshalText implements encoding.TextMarshaler with the snake_case name.
func (c Content) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// MarshalText implements encoding.TextMarshaler with the snake_case name.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Operation reports which operation an outcome belongs to (0 if invalid).
func (o Outcome) Operation() Operation {
	switch {
	case o >= Inline && o <= RecoveryRequired:
		return OpOffload
	case o >= Resolved && o <= ViewFailed:
		return OpRehydration
	}
	return 0
}

// validPairs is the closed table of (outcome, reason) pairs of docs/diagnostics.md.
var validPairs = [...][]Reason{
	Inline:            {BelowThreshold, RecoveredSegmentBypass},
	Offloaded:         {ThresholdExceeded, ReplacedCorruptBody, HistoryBudget},
	ExistingReference: {ExistingContentMatch, HistoryBudget},
	Failed:            {NoAuthorizedWorkspace, ExceedsMaxArtifactSize, WorkspaceWriteFailed, WorkspaceReadFailed},
	RecoveryRequired:  {CanceledAfterWrite, RecordCommitFailed},
	Resolved:          {DigestVerified, ToolArgument},
	Stale:             {DigestMismatch},
	Missing:           {BodyMissing},
	Unauthorized:      {OwnerMismatch},
	OverBudget:        {BudgetExceeded},
	InvalidReference:  {MalformedReference},
	ViewFailed:        {NotJSON, FilterError, LimitExceeded, Busy},
}

// NumOutcomes is one more than the largest Outcome, so tables indexed by
// outcome can be sized without naming the last one.
const NumOutcomes = int(ViewFailed) + 1

// NumReasons is one more than the largest Reason.
const NumReasons = int(ToolArgument) + 1

// ValidPair reports whether reason is one of the reasons outcome can have.
func ValidPair(o Outcome, r Reason) bool {
	if int(o) >= len(validPairs) {
		return false
	}
	for _, x := range validPairs[o] {
		if x == r {
			return true
		}
	}
	return false
}
