package child

import (
	"strings"
	"testing"
)

func TestEnvWithout(t *testing.T) {
	got := envWithout([]string{"A=1", "AB=2", "B=3", "A=4", "=x", "C"}, []string{"A", "C"})
	if strings.Join(got, " ") != "AB=2 B=3 =x" {
		t.Fatalf("%q", got)
	}
}
