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
)

var opNames = [...]string{OpOffload: "offload", OpRehydration: "rehydration"}

var outcomeNames = [...]string{
	Inline: "inline", Offloaded: "offloaded", ExistingReference: "existing_reference",
	Failed: "failed", RecoveryRequired: "recovery_required", Resolved: "resolved",
	Stale: "stale", Missing: "missing", Unauthorized: "unauthorized",
	OverBudget: "over_budget", InvalidReference: "invalid_reference",
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
	case o >= Resolved && o <= InvalidReference:
		return OpRehydration
	}
	return 0
}

// validPairs is the closed table of (outcome, reason) pairs of the spec.
var validPairs = [...][]Reason{
	Inline:            {BelowThreshold, RecoveredSegmentBypass},
	Offloaded:         {ThresholdExceeded, ReplacedCorruptBody},
	ExistingReference: {ExistingContentMatch},
	Failed:            {NoAuthorizedWorkspace, ExceedsMaxArtifactSize, WorkspaceWriteFailed, WorkspaceReadFailed},
	RecoveryRequired:  {CanceledAfterWrite, RecordCommitFailed},
	Resolved:          {DigestVerified},
	Stale:             {DigestMismatch},
	Missing:           {BodyMissing},
	Unauthorized:      {OwnerMismatch},
	OverBudget:        {BudgetExceeded},
	InvalidReference:  {MalformedReference},
}

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
