//go:build !race

package releasetest

var raceFlags []string
