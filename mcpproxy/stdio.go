package mcpproxy

import (
	"context"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/wireconn"
)

// Stream is an mcp.Transport speaking newline-delimited JSON-RPC over a
// reader and a writer, such as a process's standard input and output (the
// client side of "hybridctx mcp"). Unlike mcp.IOTransport, a Proxy reads it
// without the SDK's decoding: ids are answered exactly as sent (1.5 stays
// 1.5), and a malformed line is answered with a JSON-RPC error, or dropped
// when it carries no usable id, while the session goes on. Closing the
// connection closes neither Reader nor Writer.
type Stream struct {
	Reader io.Reader
	Writer io.Writer
	// MaxMessageBytes bounds one message read from Reader; a longer line is
	// skipped in constant memory and answered with a JSON-RPC error. Zero
	// means DefaultMaxMessageBytes; a negative value means no limit.
	MaxMessageBytes int
	// buffer is the read buffer (0: wireconn.LineBuffer); tests make it small so
	// that short lines take the long-line path.
	buffer int
}

// Connect starts reading Reader.
func (s *Stream) Connect(context.Context) (mcp.Connection, error) {
	if s.Reader == nil || s.Writer == nil {
		return nil, errors.New("mcpproxy: Stream needs a Reader and a Writer")
	}
	limit := s.MaxMessageBytes
	if limit == 0 {
		limit = DefaultMaxMessageBytes
	}
	return wireconn.NewLine(s.Reader, s.Writer, limit, nil, s.buffer), nil
}
