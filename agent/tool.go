package agent

import (
	"context"
	"encoding/json"
)

// ToolFunc is a tool body. It receives the model's JSON arguments and returns
// its result: a string, []byte or json.RawMessage as is, a
// *hybridctx.Segment (inlined whatever its size), an io.Reader (streamed), or
// any value encoding/json can encode. A non-nil error is a tool failure.
type ToolFunc func(ctx context.Context, args json.RawMessage) (any, error)

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	// Name is the tool's name, unique within a loop.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description"`
	// Parameters is the JSON schema of the arguments object.
	Parameters json.RawMessage `json:"parameters"`
}

// Tool pairs a spec with its body.
type Tool struct {
	Spec ToolSpec
	Func ToolFunc
}
