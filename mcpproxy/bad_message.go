package mcpproxy

import "github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"

// ErrMalformedMessage is matched (errors.Is) by the error the Read of a
// Command or Stream connection returns for one message it dropped: a line
// that is not a JSON-RPC 2.0 message, or one over the size limit. The
// connection is still usable: the next Read returns the next message. A
// host that reads through the SDK (the gateway, docs/gateway.md) skips
// these instead of ending the session, as the Proxy does.
var ErrMalformedMessage = wiremsg.ErrMalformed
