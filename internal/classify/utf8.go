package classify

import "unicode/utf8"

// validUTF8 reports whether p is valid UTF-8, as utf8.Valid does. On a
// machine with AVX2 (the block path's condition, hasBlocks) inputs of
// minUTF8Vector bytes or more are checked 32 bytes at a time
// (utf8_amd64.s): runs of ASCII cost one test per block, and other blocks
// a fixed few instructions, whatever the mix of sequence lengths, where
// utf8.Valid slows down at every non-ASCII rune.

// minUTF8Vector is the shortest input checked with vectors.
const minUTF8Vector = 32

// validUTF8Go is the portable validUTF8, and the definition the tests hold
// the vector path to.
func validUTF8Go(p []byte) bool { return utf8.Valid(p) }
