//go:build unix && !linux

package child

import (
	"os"
	"os/exec"
	"syscall"
)

// dieWithParent starts the program in a process group of its own, which
// signalChild signals whole, so that what the program started goes with it.
// (Without Pdeathsig, a proxy that is killed cannot take it along.)
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// signalChild sends sig to the program's process group.
func signalChild(cmd *exec.Cmd, sig syscall.Signal) error {
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		if err == syscall.ESRCH {
			return os.ErrProcessDone
		}
		return err
	}
	return nil
}
