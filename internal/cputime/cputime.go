// Package cputime reads the CPU time the process has used, for the
// benchmarks' cpu-ns/op and cpu-MB/s figures: on a shared machine it moves
// far less with other processes' load than the wall time does.
package cputime

import "time"

// Used returns the user and system CPU time the process has used so far,
// or 0 where it cannot be read.
func Used() time.Duration { return used() }
