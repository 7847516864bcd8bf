package listen

import (
	"net/http/httptest"
	"testing"
	"time"
)

// TestRate: a credential opens Burst sessions at once, then PerSecond; the
// wait it is told is until its next session; credentials do not share a
// bucket; a negative rate never refuses.
func TestRate(t *testing.T) {
	now := time.Unix(1000, 0)
	r := &Rate{Burst: 2, PerSecond: 0.5, Now: func() time.Time { return now }}
	for i := range 2 {
		if ok, _ := r.Allow("a"); !ok {
			t.Fatalf("session %d of the burst refused", i+1)
		}
	}
	ok, wait := r.Allow("a")
	if ok || wait != 2*time.Second || RetryAfter(wait) != "2" {
		t.Fatalf("over the burst: %v %v", ok, wait)
	}
	if ok, _ := r.Allow("b"); !ok {
		t.Fatal("another credential shares the bucket")
	}
	now = now.Add(2 * time.Second)
	if ok, _ := r.Allow("a"); !ok {
		t.Fatal("refilled allowance refused")
	}
	if RetryAfter(time.Millisecond) != "1" {
		t.Fatal("Retry-After under a second is not 1")
	}
	free := &Rate{PerSecond: -1, Now: time.Now}
	for range 100 {
		if ok, _ := free.Allow("a"); !ok {
			t.Fatal("an unbounded rate refused")
		}
	}
}

// TestMatchToken: the index of the token a request carries, false for none,
// another scheme or an unknown token.
func TestMatchToken(t *testing.T) {
	tokens := []string{"first-token-0123456789", "second-token-0123456789"}
	for _, c := range []struct {
		header string
		at     int
		ok     bool
	}{
		{"Bearer second-token-0123456789", 1, true},
		{"Bearer first-token-0123456789", 0, true},
		{"Bearer first-token-012345678", 0, false},
		{"Basic first-token-0123456789", 0, false},
		{"", 0, false},
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		if at, ok := MatchToken(r, tokens); at != c.at || ok != c.ok {
			t.Errorf("%q: %d %v", c.header, at, ok)
		}
	}
}
