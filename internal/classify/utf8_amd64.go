//go:build !purego

package classify

import "golang.org/x/sys/cpu"

// hasVectorUTF8 reports whether validUTF8AVX2 runs on this machine.
var hasVectorUTF8 = cpu.X86.HasAVX2

// validUTF8AVX2 reports whether the blocks 32-byte blocks at p followed by
// the 32 bytes of tail are valid UTF-8, where tail holds the input's last
// len%32 bytes padded with zero bytes.
//
//go:noescape
func validUTF8AVX2(p *byte, blocks int, tail *[32]byte) bool

func validUTF8(p []byte) bool {
	if !hasVectorUTF8 || len(p) < minUTF8Vector {
		return validUTF8Go(p)
	}
	var tail [32]byte
	full := len(p) &^ 31
	copy(tail[:], p[full:])
	return validUTF8AVX2(&p[0], full>>5, &tail)
}
