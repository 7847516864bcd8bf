//go:build !amd64

package classify

func validUTF8(p []byte) bool { return validUTF8Go(p) }
