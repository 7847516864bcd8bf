package jsonstream

import "bytes"

// IsNull reports whether raw, a JSON value as written, is the literal null.
func IsNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }
