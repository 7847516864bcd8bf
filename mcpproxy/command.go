package mcpproxy

import (
	"context"
	"errors"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/child"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wireconn"
)

// DefaultMaxMessageBytes is the largest single message Command accepts from
// its program when MaxMessageBytes is zero: 256 MiB. (The SDK's
// CommandTransport accepts 16 MiB, less than one large tool result.)
const DefaultMaxMessageBytes = 256 << 20

// DefaultTerminateDuration is how long Close waits after closing the
// program's standard input before it sends SIGTERM, and again before SIGKILL:
// a program is gone within two seconds, before a client that gives its
// server 2 s to exit kills the proxy (the TypeScript SDK's stdio client).
const DefaultTerminateDuration = time.Second

// Command is an mcp.Transport that starts a program and speaks
// newline-delimited JSON-RPC with it over its standard input and output,
// like mcp.CommandTransport, with a configurable message size limit. The
// program's standard error is whatever Cmd.Stderr is (nil discards it).
//
// A Proxy reads the program's output as it reads a Stream: ids exactly as
// written, and a line that is not a JSON-RPC message (or is over the limit)
// is dropped while the session goes on; a request waiting for the response
// such a line held gets a JSON-RPC error.
//
// Closing the connection closes the program's standard input, waits for it
// to exit, sends SIGTERM and then SIGKILL if it does not; Close returns the
// program's exit error (nil for exit status 0). The program dies with the
// proxy even when the proxy is killed: on Linux it gets SIGKILL when the
// proxy exits (Pdeathsig); on other Unix systems it runs in a process group
// of its own, which Close signals whole (package internal/child starts and
// ends the program).
type Command struct {
	// Cmd is the program; it must not have been started.
	Cmd *exec.Cmd
	// MaxMessageBytes bounds one message read from the program. Zero means
	// DefaultMaxMessageBytes; a negative value means no limit.
	MaxMessageBytes int
	// TerminateDuration is the wait before each signal; zero means
	// DefaultTerminateDuration.
	TerminateDuration time.Duration
	// DropEnv names environment variables the program must not get (the
	// listener's bearer token): they are removed from Cmd.Env, or from the
	// environment the program would inherit when Cmd.Env is nil.
	DropEnv []string
}

// Connect starts the program.
func (c *Command) Connect(ctx context.Context) (mcp.Connection, error) {
	if c.Cmd == nil {
		return nil, errors.New("mcpproxy: Command has no Cmd")
	}
	td := c.TerminateDuration
	if td <= 0 {
		td = DefaultTerminateDuration
	}
	stdout, in, err := child.Start(c.Cmd, c.DropEnv, td)
	if err != nil {
		return nil, err
	}
	limit := c.MaxMessageBytes
	if limit == 0 {
		limit = DefaultMaxMessageBytes
	}
	return wireconn.NewLine(stdout, in, limit, in.Close, 0), nil
}
