//go:build !unix

package child

import (
	"os"
	"os/exec"
	"syscall"
)

// dieWithParent does nothing where there are no process groups.
func dieWithParent(*exec.Cmd) {}

// signalChild kills the program (the only signal there is).
func signalChild(cmd *exec.Cmd, sig syscall.Signal) error {
	if sig == syscall.SIGTERM {
		return os.ErrProcessDone // nothing gentler than Kill: go straight to it
	}
	return cmd.Process.Kill()
}
