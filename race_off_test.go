//go:build !race

package hybridctx_test

const raceEnabled = false
