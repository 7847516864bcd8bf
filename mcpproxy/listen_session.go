package mcpproxy

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpSession is one MCP session of an HTTPHandler: its server transport and
// the proxy session running between it and the upstream.
type httpSession struct {
	h         *HTTPHandler
	id        string
	cred      string // the name of the credential that opened it
	transport *mcp.StreamableServerTransport
	ready     chan struct{} // closed once the transport is connected
	done      chan struct{} // closed once the proxy session ended

	mu    sync.Mutex
	conn  mcp.Connection // the connected transport
	ended bool
	refs  int       // requests in progress
	used  time.Time // when the last request started or ended
	timer *time.Timer
}

// run runs the proxy session until it ends, then forgets the session.
func (s *httpSession) run(p *Proxy, upstream mcp.Transport) {
	defer s.h.wg.Done()
	defer close(s.done)
	defer s.h.remove(s)
	defer s.stopTimer()
	_ = p.Run(s.h.ctx, upstream, readyTransport{s})
	s.end()
}

// readyTransport connects the session's server transport and reports it
// ready, so the first request is served only once the proxy reads.
type readyTransport struct{ s *httpSession }

func (t readyTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.s.transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	s := t.s
	s.mu.Lock()
	s.conn = conn
	if s.h.idle > 0 {
		s.timer = time.AfterFunc(s.h.idle, s.end)
		if s.refs > 0 { // the opening request is in flight
			s.timer.Stop()
		}
	}
	s.mu.Unlock()
	close(s.ready)
	return conn, nil
}

// end closes the client side of the session: the proxy then closes the
// upstream (and its process) and run returns.
func (s *httpSession) end() {
	s.mu.Lock()
	conn := s.conn
	s.ended = true
	s.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// startRequest pauses the idle timer while a request is served.
func (s *httpSession) startRequest() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used = time.Now()
	if s.refs++; s.refs == 1 && s.timer != nil {
		s.timer.Stop()
	}
}

// endRequest restarts the idle timer when no request is in progress.
func (s *httpSession) endRequest() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used = time.Now()
	if s.refs--; s.refs == 0 && s.timer != nil && !s.ended {
		s.timer.Reset(s.h.idle)
	}
}

func (s *httpSession) stopTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
}
