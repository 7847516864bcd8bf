package classify

import "golang.org/x/sys/cpu"

// hasBlocks reports whether blockEvents runs on this machine (AVX2 and
// carry-less multiplication). Tests turn it off to check the scanner
// without it.
var hasBlocks = cpu.X86.HasAVX2 && cpu.X86.HasPCLMULQDQ

// blockEventsAVX2 is blockEvents for p[:blocks*64].
//
//go:noescape
func blockEventsAVX2(p *byte, blocks int, out *uint64, bs *blockState)

func blockEvents(p []byte, blocks int, out []uint64, bs *blockState) {
	_ = p[blocks<<6-1]
	_ = out[blocks*eventWords-1]
	blockEventsAVX2(&p[0], blocks, &out[0], bs)
}
