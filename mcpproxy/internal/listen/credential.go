package listen

import (
	"crypto/subtle"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MatchToken returns the index in tokens of the bearer token r carries,
// or false when it carries none of them. Every token is compared, in
// constant time, whatever matched before; with tokens that are all
// different, at most one matches.
func MatchToken(r *http.Request, tokens []string) (int, bool) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return 0, false
	}
	at, found := 0, false
	for i, t := range tokens {
		if subtle.ConstantTimeCompare([]byte(got), []byte(t)) == 1 {
			at, found = i, true
		}
	}
	return at, found
}

// Rate is each credential's allowance of new sessions: a token bucket
// holding up to Burst, refilled at PerSecond. Its caller serializes the
// calls (the listener holds its lock).
type Rate struct {
	Burst     int
	PerSecond float64 // negative: no bound
	Now       func() time.Time

	buckets map[string]*bucket // by credential
}

// bucket is one credential's bucket.
type bucket struct {
	tokens float64
	last   time.Time
}

// Allow takes one new session from cred's allowance, or returns how long
// until one is available.
func (r *Rate) Allow(cred string) (bool, time.Duration) {
	if r.PerSecond < 0 {
		return true, 0
	}
	now := r.Now()
	b := r.buckets[cred]
	if b == nil {
		if r.buckets == nil {
			r.buckets = map[string]*bucket{}
		}
		b = &bucket{tokens: float64(r.Burst), last: now}
		r.buckets[cred] = b
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = math.Min(float64(r.Burst), b.tokens+elapsed.Seconds()*r.PerSecond)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	// At most a day, so that a tiny rate cannot overflow the duration.
	return false, time.Duration(math.Min((1-b.tokens)/r.PerSecond, 86400) * float64(time.Second))
}

// RetryAfter is the Retry-After value of a wait: whole seconds, at least 1.
func RetryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
