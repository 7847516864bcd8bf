// Package writerstate is the bookkeeping the body writers of the
// distributed backends share (blobstore, pgstore): whether the writer
// ended, its sticky error, and the bytes written against the backend's
// limit on a body.
package writerstate

import (
	"fmt"

	"github.com/hybridctx/hybridctx/workspace/driver"
)

// State is embedded in a writer. Its zero value is a writer that has
// written nothing.
type State struct {
	N    int64 // bytes written
	Done bool  // committed or aborted
	Err  error // the first failure of a write, returned by every later call
}

// Check returns the error every call of an ended or failed writer returns:
// ended once the writer was committed or aborted, else its sticky error;
// nil for a writer that may go on.
func (s *State) Check(ended error) error {
	if s.Done {
		return ended
	}
	return s.Err
}

// Admit checks a Write of n more bytes against the limit maxBody. Past it
// the writer fails for good, with an error wrapping driver.ErrTooLarge
// that what ("blobstore: a body") begins.
func (s *State) Admit(n int, maxBody int64, what string) error {
	if s.N+int64(n) > maxBody {
		s.Err = fmt.Errorf("%s holds at most %d bytes: %w", what, maxBody, driver.ErrTooLarge)
		return s.Err
	}
	return nil
}
