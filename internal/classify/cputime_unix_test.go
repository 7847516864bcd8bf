//go:build unix

package classify

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used so
// far. On a shared machine it moves far less with other processes' load
// than the wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
