//go:build !amd64

package classify

// hasBlocks is false: only amd64 has a vector blockEvents; elsewhere the
// scanner reads whole tokens 8 bytes at a time (fast).
var hasBlocks = false

// hasAVX512 is false: there is no AVX-512 here.
var hasAVX512 = false

// blockEvents writes to out the words of each of the blocks 64-byte
// blocks of p (1 to batchBlocks), carrying bs from block to block.
func blockEvents(p []byte, blocks int, out *eventBatch, bs *blockState) {
	blockEventsGo(p, blocks, out, bs)
}
