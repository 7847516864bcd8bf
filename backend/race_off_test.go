//go:build !race

package backend_test

// raceEnabled reports a -race build.
const raceEnabled = false
