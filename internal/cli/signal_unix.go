//go:build unix

package cli

import (
	"os"
	"syscall"
)

// watchedSignals are the signals Signals watches: the two that cancel and
// the one Sync raises.
var watchedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGWINCH}

// isSyncSignal reports whether s is the signal Sync raises.
func isSyncSignal(s syscall.Signal) bool { return s == syscall.SIGWINCH }

// raiseSyncSignal sends the sync signal to the process itself.
func raiseSyncSignal() bool { return syscall.Kill(os.Getpid(), syscall.SIGWINCH) == nil }
