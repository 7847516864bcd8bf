package classify

import "golang.org/x/sys/cpu"

// hasBlocks reports whether blockMasks runs on this machine (AVX2). Tests
// turn it off to check the scanner without it.
var hasBlocks = cpu.X86.HasAVX2

// blockMasksAVX2 writes the masks of each of the blocks 64-byte blocks at
// p to out, maskCount words per block (see blockMasks).
//
//go:noescape
func blockMasksAVX2(p *byte, blocks int, out *uint64)

func blockMasks(p []byte, blocks int, out []uint64) {
	_ = p[blocks<<6-1]
	_ = out[blocks*maskCount-1]
	blockMasksAVX2(&p[0], blocks, &out[0])
}
