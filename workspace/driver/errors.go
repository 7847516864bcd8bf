package driver

import "errors"

// Errors a driver wraps for the Store to recognise; package workspace
// re-exports them, so callers test workspace.ErrTooLarge and
// workspace.ErrChanged with errors.Is.
var (
	// ErrTooLarge means a body exceeded the size limit it was written
	// under (the Store's MaxBytes, or a backend's own largest body).
	ErrTooLarge = errors.New("body exceeds the size limit")
	// ErrChanged means a body changed while it was being read.
	ErrChanged = errors.New("stored body changed while it was read")
)
