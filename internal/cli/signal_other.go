//go:build !unix

package cli

import (
	"os"
	"syscall"
)

// watchedSignals are the signals Signals watches; without a sync signal,
// Sync returns at once.
var watchedSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

func isSyncSignal(syscall.Signal) bool { return false }

func raiseSyncSignal() bool { return false }
