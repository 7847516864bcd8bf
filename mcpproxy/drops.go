package mcpproxy

import (
	"context"
	"log/slog"
	"sync"
)

// Where a dropped message came from.
const (
	fromClient   = "client"
	fromUpstream = "upstream"
)

// Why an upstream response was dropped (besides the wiremsg.Bad reasons).
const (
	dropLocal   = "the response answers a request the proxy serves itself"
	dropUnknown = "the response answers no request in progress (already answered, or never sent)"
)

// dropCounts counts the messages a session dropped or refused, by side and
// reason.
type dropCounts struct {
	mu sync.Mutex
	n  map[[2]string]int64
}

// drop counts one dropped or refused message and logs it: the side, the
// categorical reason and the count so far, never the message's content or
// id.
func (s *session) drop(from, why string) {
	s.drops.mu.Lock()
	if s.drops.n == nil {
		s.drops.n = map[[2]string]int64{}
	}
	k := [2]string{from, why}
	s.drops.n[k]++
	n := s.drops.n[k]
	s.drops.mu.Unlock()
	if s.p.log != nil {
		s.p.log.LogAttrs(context.Background(), slog.LevelWarn, "hybridctx mcp: message dropped",
			slog.String("from", from), slog.String("reason", why), slog.Int64("count", n))
	}
}
