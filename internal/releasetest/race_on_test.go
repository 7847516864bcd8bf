//go:build race

package releasetest

// raceFlags builds the user's program as the test itself is built, so
// that the packages it shares with the adapter's own tests (-race in
// .ci/run) are compiled once.
var raceFlags = []string{"-race"}
