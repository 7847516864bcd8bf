package hybridctx

import (
	"errors"
	"fmt"
	"math"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
)

// DefaultMaxArtifactBytes is the largest result a Policy stores unless it
// sets another limit: 1 GiB.
const DefaultMaxArtifactBytes = 1 << 30

// DefaultReadToolName is the name of the explicit read tool the notice
// points the model to.
const DefaultReadToolName = "read_artifact"

// MaxReadToolNameLen bounds each of Policy.ReadToolName, SearchToolName
// and QueryToolName.
const MaxReadToolNameLen = 64

// ErrInvalidPolicy is wrapped by policy validation errors.
var ErrInvalidPolicy = errors.New("invalid offload policy")

// Policy configures offload decisions.
type Policy struct {
	// InlineThreshold is the largest result, in bytes, that stays inline.
	// It must be > 0 and at most the largest stored result (MaxArtifactBytes
	// or its default), since a result between the two could neither stay
	// inline nor be stored.
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
	// (docs/rehydration.md) by the same rules; empty means DefaultSearchToolName and
	// DefaultQueryToolName.
	SearchToolName, QueryToolName string
	// ToolThresholds overrides InlineThreshold for the results of the
	// named tools (docs/rehydration.md); each threshold must be > 0. The map must not
	// change once an Offloader uses the policy.
	ToolThresholds map[string]int64
	// PreviewBytes, when > 0, adds to the notice of a text or JSON body its
	// first whole lines, at most this many bytes (docs/offload.md, "The notice"). 0 means no preview.
	PreviewBytes int64
	// ResultThreshold bounds one result made of several parts (the content
	// blocks of an MCP tool result): after each part is decided, when the
	// parts kept inline total more than this many bytes, the largest of them
	// are stored one by one until the rest fits (docs/mcp-proxy.md). Zero means
	// DefaultResultThresholdFactor × InlineThreshold; it must be >= 0.
	ResultThreshold int64
	// History bounds the whole conversation's tool content (see
	// docs/history.md); the zero value means no bound.
	History HistoryPolicy
	// Tokenizer, when set, counts tokens: the history budget is then in
	// tokens, and ThresholdTokens may bound each result. Nil means the
	// budget is in bytes.
	Tokenizer Tokenizer
	// ThresholdTokens, when > 0, also offloads a result at or below
	// InlineThreshold bytes whose Tokenizer count is over it: a result stays
	// inline only within both bounds. It needs a Tokenizer.
	ThresholdTokens int64
	// ResultThresholdTokens, when > 0, bounds one result of several parts
	// in tokens as well as ResultThreshold bounds it in bytes: the bound is
	// checked on the bytes a result sends, so it applies as the largest
	// byte count that can hold no more tokens (ResultTokenBytes), and
	// ResultBound is the smaller of the two. It needs a Tokenizer. See
	// docs/history.md, "Tokens".
	ResultThresholdTokens int64
}

// DefaultResultThresholdFactor gives Policy.ResultThreshold when it is zero:
// this many times the inline threshold.
const DefaultResultThresholdFactor = 4

// Validate reports whether p is usable. The error wraps ErrInvalidPolicy.
func (p Policy) Validate() error {
	if p.InlineThreshold <= 0 {
		return fmt.Errorf("%w: inline threshold must be > 0", ErrInvalidPolicy)
	}
	if p.MaxArtifactBytes < 0 {
		return fmt.Errorf("%w: max artifact size must be >= 0", ErrInvalidPolicy)
	}
	if p.InlineThreshold > p.maxBytes() {
		return fmt.Errorf("%w: inline threshold %d exceeds the max artifact size %d", ErrInvalidPolicy, p.InlineThreshold, p.maxBytes())
	}
	if p.ResultThreshold < 0 {
		return fmt.Errorf("%w: result threshold must be >= 0", ErrInvalidPolicy)
	}
	if p.ThresholdTokens < 0 || p.ThresholdTokens > 0 && p.Tokenizer == nil {
		return fmt.Errorf("%w: a token threshold must be >= 0 and needs a tokenizer", ErrInvalidPolicy)
	}
	if err := p.validateTokenCount(); err != nil {
		return err
	}
	if p.ResultThresholdTokens < 0 || p.ResultThresholdTokens > 0 && p.Tokenizer == nil {
		return fmt.Errorf("%w: a result token threshold must be >= 0 and needs a tokenizer", ErrInvalidPolicy)
	}
	if err := p.History.validate(); err != nil {
		return err
	}
	return p.validateRetrieval()
}

// ResultBound returns the whole-result bound in bytes: ResultThreshold, or
// DefaultResultThresholdFactor × InlineThreshold when that is zero; with
// ResultThresholdTokens, the smaller of that and ResultTokenBytes.
func (p Policy) ResultBound() int64 {
	bound := int64(math.MaxInt64)
	switch {
	case p.ResultThreshold > 0:
		bound = p.ResultThreshold
	case p.InlineThreshold <= math.MaxInt64/DefaultResultThresholdFactor:
		bound = DefaultResultThresholdFactor * p.InlineThreshold
	}
	if t := p.ResultTokenBytes(); t > 0 {
		bound = min(bound, t)
	}
	return bound
}

// ResultTokenBytes returns the most bytes a result may send and still be
// sure to hold at most ResultThresholdTokens tokens, or 0 when there is no
// token bound. Under EstimateTokens (one token per four bytes, rounded up)
// that is exactly 4 × the bound. Under any other tokenizer it is the bound
// itself: a BPE token stands for at least one byte, so N bytes are never
// more than N tokens (a conservative bound: typical text runs three to
// four bytes a token). See docs/history.md, "Tokens".
func (p Policy) ResultTokenBytes() int64 {
	n := p.ResultThresholdTokens
	if n <= 0 || p.Tokenizer == nil {
		return 0
	}
	if _, ok := p.Tokenizer.(EstimateTokens); ok && n <= math.MaxInt64/4 {
		return 4 * n
	}
	return n
}

func (p Policy) maxBytes() int64 {
	if p.MaxArtifactBytes == 0 {
		return DefaultMaxArtifactBytes
	}
	return p.MaxArtifactBytes
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
