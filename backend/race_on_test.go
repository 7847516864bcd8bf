//go:build race

package backend_test

// raceEnabled reports a -race build, whose allocation patterns let more
// garbage build up between collections.
const raceEnabled = true
