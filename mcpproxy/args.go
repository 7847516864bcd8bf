package mcpproxy

import (
	"encoding/json"

	"github.com/hybridctx/hybridctx/agent"
)

// ErrInvalidArguments is wrapped by every error ParseReadArgs returns. It is
// the agent package's, so the proxy and an in-process agent loop accept and
// refuse exactly the same read tool arguments.
var ErrInvalidArguments = agent.ErrInvalidArguments

// ReadArgs are the arguments of the read tool:
// {"reference": "artifact://sha256/<hex>", "offset": N, "length": N, "max_bytes": N}.
type ReadArgs = agent.ReadArgs

// ParseReadArgs parses the arguments object of a read tool call with the
// rules of agent.ParseReadArgs; the error's text is safe to show to the
// model.
func ParseReadArgs(raw json.RawMessage) (ReadArgs, error) { return agent.ParseReadArgs(raw) }
