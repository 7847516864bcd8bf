//go:build race

package mcpproxy

// raceEnabled reports a -race build, which runs the 64 MiB memory tests
// twenty times slower; CI runs them once more without it.
const raceEnabled = true
