package jsonstream

import "testing"

func TestIsNull(t *testing.T) {
	for in, want := range map[string]bool{"null": true, " null\n": true, "nul": false, `"null"`: false, "": false} {
		if IsNull([]byte(in)) != want {
			t.Errorf("IsNull(%q) != %v", in, want)
		}
	}
}
