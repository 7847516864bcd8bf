// Package child starts the program behind an mcpproxy.Command and ends it:
// its environment without the names it must not get, its standard input
// the handle that ends it (close, then SIGTERM, then SIGKILL), and its
// death with the proxy however the proxy exits (Pdeathsig on Linux, a
// process group of its own on other Unix systems). Reading and writing
// its messages is the caller's (mcpproxy's line framing).
package child

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Start starts cmd, which must not have been started, without the
// environment variables named in drop (removed from cmd.Env, or from the
// environment cmd would inherit when cmd.Env is nil). It returns the
// program's standard output and its standard input; closing the input
// ends the program (Input.Close).
func Start(cmd *exec.Cmd, drop []string, grace time.Duration) (io.Reader, *Input, error) {
	if len(drop) > 0 {
		cmd.Env = envWithout(cmd.Environ(), drop)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	// Closing is done through standard input; standard output is closed by
	// Wait once the program is gone.
	return stdout, &Input{cmd: cmd, stdin: stdin, grace: grace}, nil
}

// Input is the program's standard input; closing it ends the program.
type Input struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	grace time.Duration
}

// Write writes to the program's standard input.
func (w *Input) Write(p []byte) (int, error) { return w.stdin.Write(p) }

// Close closes standard input, then waits for the program: grace, SIGTERM,
// grace, SIGKILL. It returns the program's exit error.
func (w *Input) Close() error {
	_ = w.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(w.grace)
		defer t.Stop()
		select {
		case err := <-done:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if signalChild(w.cmd, syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := signalChild(w.cmd, syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("mcpproxy: killing the upstream: %w", err)
	}
	return <-done
}
