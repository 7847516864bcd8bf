package adaptkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/agent"
)

// ReadOptions configure the read tools. The zero value means defaults.
type ReadOptions struct {
	// ReadToolName is read_artifact's name; empty means
	// hybridctx.DefaultReadToolName. It must be the name the Offloader's
	// notices point to.
	ReadToolName string
	// Budget caps every read; 0 means the shared default.
	Budget int64
}

// ToolDef describes one read tool to the model.
type ToolDef struct {
	Name        string
	Description string
	// InputSchema is the JSON schema of the arguments object.
	InputSchema json.RawMessage
}

// Answer is a read tool's answer.
type Answer struct {
	// Text is the verified bytes as a string when resolved, else the
	// categorical text the model can act on.
	Text string
	// IsError is set for every answer that is not resolved content.
	IsError bool
	// Segment is the verified segment of a resolved range read, else nil.
	Segment *hybridctx.Segment
}

// Reads is the set of read tools over one Rehydrator. It is safe for
// concurrent use.
type Reads struct {
	read *agent.ReadTool
}

// NewReads returns the read tools over reh.
func NewReads(reh *hybridctx.Rehydrator, opts ReadOptions) (*Reads, error) {
	if reh == nil {
		return nil, ErrNilRehydrator
	}
	rt, err := agent.NewReadTool(reh, &agent.ReadToolOptions{Name: opts.ReadToolName, BudgetCap: opts.Budget})
	if err != nil {
		return nil, fmt.Errorf("hybridctx adapter: %w", err)
	}
	return &Reads{read: rt}, nil
}

// Tools returns the definitions of every read tool.
func (r *Reads) Tools() []ToolDef {
	s := r.read.Spec()
	return []ToolDef{{Name: s.Name, Description: s.Description, InputSchema: s.Parameters}}
}

// Has reports whether name is one of the read tools.
func (r *Reads) Has(name string) bool { return name == r.read.Name() }

// Call runs the read tool name with args. Every outcome, malformed
// arguments and a storage failure are answers; the error is non-nil only
// for a cancelled context or a name that is not a read tool.
func (r *Reads) Call(ctx context.Context, name string, args json.RawMessage) (Answer, error) {
	if !r.Has(name) {
		return Answer{}, fmt.Errorf("hybridctx adapter: %q is not a read tool", name)
	}
	v, err := r.read.Call(ctx, args)
	switch {
	case err == nil:
		seg := v.(*hybridctx.Segment)
		return Answer{Text: string(seg.Bytes()), Segment: seg}, nil
	case ctx.Err() != nil:
		return Answer{}, ctx.Err()
	case errors.Is(err, agent.ErrReadRefused), errors.Is(err, agent.ErrInvalidArguments), errors.Is(err, agent.ErrReadFailed):
		return Answer{Text: err.Error(), IsError: true}, nil
	}
	return Answer{Text: agent.ErrReadFailed.Error(), IsError: true}, nil
}
