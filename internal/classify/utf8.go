package classify

import "unicode/utf8"

// validUTF8 reports whether p is valid UTF-8, as utf8.Valid does. It is the
// one piece of assembly the classifier keeps (utf8_amd64.s, AVX2, 32 bytes
// at a time), because a user-visible figure needs it: a large text body is
// classified beside its hash, so the offload of such a body takes the time
// of the slower of the two, and utf8.Valid slows down at every non-ASCII
// rune. Measured on the benchmark text (non-ASCII words among ASCII ones,
// BenchmarkClassify/text, 1 MiB, loaded machine): utf8.Valid 250-420 MB/s,
// several times slower than SHA-256 (about 1.8 GB/s here), the vector check
// 3.4-5.7 GB/s. Build with the purego tag, or on another architecture, to
// use validUTF8Go instead.

// minUTF8Vector is the shortest input checked with vectors.
const minUTF8Vector = 32

// validUTF8Go is the portable validUTF8, and the definition the tests hold
// the vector path to.
func validUTF8Go(p []byte) bool { return utf8.Valid(p) }
