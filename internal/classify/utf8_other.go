//go:build !amd64 || purego

package classify

// hasVectorUTF8 is false: only amd64 has the vector check.
const hasVectorUTF8 = false

func validUTF8(p []byte) bool { return validUTF8Go(p) }
