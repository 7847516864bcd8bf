package writerstate

import (
	"errors"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx/workspace/driver"
)

// TestState: a writer may go on until a write passes the limit, which
// sticks; an ended writer reports ended first.
func TestState(t *testing.T) {
	ended := errors.New("ended")
	var s State
	if err := s.Check(ended); err != nil {
		t.Fatal(err)
	}
	if err := s.Admit(10, 10, "x: a body"); err != nil {
		t.Fatal(err)
	}
	s.N = 10
	err := s.Admit(1, 10, "x: a body")
	if !errors.Is(err, driver.ErrTooLarge) || !strings.HasPrefix(err.Error(), "x: a body holds at most 10 bytes") {
		t.Fatalf("past the limit: %v", err)
	}
	if got := s.Check(ended); got != err {
		t.Fatalf("the failure did not stick: %v", got)
	}
	s.Done = true
	if got := s.Check(ended); got != ended {
		t.Fatalf("an ended writer: %v", got)
	}
}
