package cputime

import (
	"runtime"
	"testing"
)

// TestUsedGrows: CPU spent between two reads shows in the second.
func TestUsedGrows(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("not read here")
	}
	start := Used()
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	if Used() <= start || x == 1 {
		t.Fatalf("no CPU time counted: %v then %v", start, Used())
	}
}
