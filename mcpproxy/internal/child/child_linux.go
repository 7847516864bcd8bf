package child

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel send the program SIGKILL when the proxy
// exits, however it exits (SIGKILL included).
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// signalChild sends sig to the program.
func signalChild(cmd *exec.Cmd, sig syscall.Signal) error { return cmd.Process.Signal(sig) }
