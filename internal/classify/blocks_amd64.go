package classify

import "golang.org/x/sys/cpu"

// hasBlocks reports whether blockEvents runs on this machine (AVX2 and
// carry-less multiplication). Tests turn it off to check the scanner
// without it.
var hasBlocks = cpu.X86.HasAVX2 && cpu.X86.HasPCLMULQDQ

// hasAVX512 selects the AVX-512 blockEvents over the AVX2 one. Tests turn
// it off to check the AVX2 one.
var hasAVX512 = hasBlocks && cpu.X86.HasAVX512BW

// blockEventsAVX2 is blockEvents for p[:blocks*64], 32 bytes at a time.
//
//go:noescape
func blockEventsAVX2(p *byte, blocks int, out *uint64, bs *blockState)

// blockEventsAVX512 is blockEvents for p[:blocks*64], 64 bytes at a time.
//
//go:noescape
func blockEventsAVX512(p *byte, blocks int, out *uint64, bs *blockState)

// blockEvents writes to out the words of each of the blocks 64-byte
// blocks of p (1 to batchBlocks), carrying bs from block to block, as
// blockEventsGo does.
func blockEvents(p []byte, blocks int, out *eventBatch, bs *blockState) {
	_ = p[blocks<<6-1]
	_ = out[blocks-1]
	if hasAVX512 {
		blockEventsAVX512(&p[0], blocks, &out[0][0], bs)
		return
	}
	blockEventsAVX2(&p[0], blocks, &out[0][0], bs)
}
