//go:build race

package hybridctx_test

// raceEnabled reports a -race build, in which sync.Pool drops items at
// random, so pooled buffers (the regexp machines among them) are allocated
// again and allocation counts mean nothing.
const raceEnabled = true
