package hybridctx

import (
	"errors"
	"fmt"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
)

// DefaultMaxArtifactBytes is the largest result a Policy stores unless it
// sets another limit: 1 GiB.
const DefaultMaxArtifactBytes = 1 << 30

// DefaultReadToolName is the name of the explicit read tool the notice
// points the model to.
const DefaultReadToolName = "read_artifact"

// MaxReadToolNameLen bounds Policy.ReadToolName.
const MaxReadToolNameLen = 64

// ErrInvalidPolicy is wrapped by policy validation errors.
var ErrInvalidPolicy = errors.New("invalid offload policy")

// Policy configures offload decisions.
type Policy struct {
	// InlineThreshold is the largest result, in bytes, that stays inline.
	// It must be > 0.
	InlineThreshold int64
	// MaxArtifactBytes is the largest result that is stored; a larger one
	// fails with exceeds_max_artifact_size. Zero means
	// DefaultMaxArtifactBytes.
	MaxArtifactBytes int64
	// ReadToolName is the tool the notice tells the model to call. Empty
	// means DefaultReadToolName; otherwise at most 64 bytes of
	// [A-Za-z0-9_.-].
	ReadToolName string
	// SearchToolName and QueryToolName name the search and query tools
	// (§13) by the same rules; empty means DefaultSearchToolName and
	// DefaultQueryToolName.
	SearchToolName, QueryToolName string
	// ToolThresholds overrides InlineThreshold for the results of the
	// named tools (§13); each threshold must be > 0. The map must not
	// change once an Offloader uses the policy.
	ToolThresholds map[string]int64
	// PreviewBytes, when > 0, adds to the notice of a text or JSON body its
	// first whole lines, at most this many bytes (§13). 0 means no preview.
	PreviewBytes int64
}

// Validate reports whether p is usable. The error wraps ErrInvalidPolicy.
func (p Policy) Validate() error {
	if p.InlineThreshold <= 0 {
		return fmt.Errorf("%w: inline threshold must be > 0", ErrInvalidPolicy)
	}
	if p.MaxArtifactBytes < 0 {
		return fmt.Errorf("%w: max artifact size must be >= 0", ErrInvalidPolicy)
	}
	if n := p.ReadToolName; n != "" {
		if len(n) > MaxReadToolNameLen {
			return fmt.Errorf("%w: read tool name longer than %d bytes", ErrInvalidPolicy, MaxReadToolNameLen)
		}
		for i := 0; i < len(n); i++ {
			c := n[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
				return fmt.Errorf("%w: read tool name must match [A-Za-z0-9_.-]", ErrInvalidPolicy)
			}
		}
	}
	return p.validateRetrieval()
}

func (p Policy) maxBytes() int64 {
	if p.MaxArtifactBytes == 0 {
		return DefaultMaxArtifactBytes
	}
	return p.MaxArtifactBytes
}

func (p Policy) toolName() string {
	if p.ReadToolName == "" {
		return DefaultReadToolName
	}
	return p.ReadToolName
}

// ErrNoWorkspace means a binding has no workspace where one is required.
var ErrNoWorkspace = errors.New("binding has no workspace")

// Binding is an owner plus the one workspace that owner is authorized to use,
// captured once per execution by trusted host code and passed explicitly.
type Binding struct {
	owner artifact.Owner
	store *workspace.Store
}

// NewBinding binds owner to store. The owner must be complete (the error
// wraps artifact.ErrInvalidOwner). A nil store makes a binding with no
// authorized workspace: oversized results then fail with
// no_authorized_workspace.
func NewBinding(owner artifact.Owner, store *workspace.Store) (*Binding, error) {
	if err := owner.Validate(); err != nil {
		return nil, err
	}
	return &Binding{owner: owner, store: store}, nil
}

// Owner returns the bound owner.
func (b *Binding) Owner() artifact.Owner { return b.owner }

// Store returns the bound workspace, or nil.
func (b *Binding) Store() *workspace.Store { return b.store }
