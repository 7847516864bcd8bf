package workspace

import (
	"errors"
	"fmt"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

var (
	// ErrCorrupt means a stored body does not match its digest or its
	// recorded size.
	ErrCorrupt = errors.New("stored body does not match its digest")
	// ErrTooLarge means a body exceeded the size limit it was written under
	// (the same value as driver.ErrTooLarge, which drivers wrap).
	ErrTooLarge = driver.ErrTooLarge
	// ErrChanged means a body changed while it was being read (the same
	// value as driver.ErrChanged, which drivers wrap).
	ErrChanged = driver.ErrChanged
	// ErrClosed means the Store was closed.
	ErrClosed = errors.New("workspace is closed")
)

// Error is the one typed error of the Store: which operation failed, on which
// body, and why. Use errors.Is against the sentinels above, fs.ErrNotExist,
// fs.ErrExist, or a context error.
type Error struct {
	// Op is the Store operation, such as "put", "read" or "record".
	Op string
	// Ref is the body concerned; zero when none.
	Ref artifact.Ref
	// Err is the cause.
	Err error
}

func (e *Error) Error() string {
	if e.Ref.IsZero() {
		return fmt.Sprintf("workspace %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("workspace %s %s: %v", e.Op, e.Ref.Hex()[:12], e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func wrap(op string, ref artifact.Ref, err error) error {
	if err == nil {
		return nil
	}
	var we *Error
	if errors.As(err, &we) {
		return err
	}
	return &Error{Op: op, Ref: ref, Err: err}
}
