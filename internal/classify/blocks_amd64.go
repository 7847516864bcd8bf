package classify

import "golang.org/x/sys/cpu"

// hasBlocks reports whether blockMasks runs on this machine (AVX2). Tests
// turn it off to check the scanner without it.
var hasBlocks = cpu.X86.HasAVX2

// blockMasksAVX2 is blockMasks for p[:blocks*64].
//
//go:noescape
func blockMasksAVX2(p *byte, blocks int, out *uint64)

func blockMasks(p []byte, blocks int, out []uint64) {
	_ = p[blocks<<6-1]
	_ = out[blocks*maskCount-1]
	blockMasksAVX2(&p[0], blocks, &out[0])
}
