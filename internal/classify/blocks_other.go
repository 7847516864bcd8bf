//go:build !amd64

package classify

// hasBlocks is false: only amd64 has a vector blockMasks; elsewhere the
// scanner reads whole tokens 8 bytes at a time (fast).
var hasBlocks = false

func blockMasks(p []byte, blocks int, out []uint64) { blockMasksGo(p, blocks, out) }
