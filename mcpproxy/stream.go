package mcpproxy

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

// Long upstream lines, and the tools/call results among them bounded as
// they are read by internal/bound's Walk (internal/bound/walk.go says how,
// and where the answer may differ from the whole message's). A long line
// answering a forwarded tools/call whose id came before its result is
// walked as it is read; a result whose id comes after it is spooled first
// (internal/wiremsg/large.go), then walked from the spool.

// streamAbove is the line length past which a line is read as a long one.
const streamAbove = 1 << 20

// streamBuffer is the read buffer of a streamed payload, and of a spool.
const streamBuffer = bound.StreamBuffer

// passLarge is the session's wireconn.Hook for the client side: a long message
// is read with its long value spooled.
func (s *session) passLarge(prefix []byte, rest io.Reader) (*wiremsg.Msg, error) {
	l := wiremsg.NewLongLine(prefix, rest, s.p.tempDir, streamBuffer)
	m, err := l.Read(nil)
	if err != nil {
		return nil, l.Bad(err)
	}
	return m, nil
}

// streamLarge is the session's wireconn.Hook for the upstream side: a long
// message is read with its long value spooled, except that a tools/call
// result is bounded as it is read (or, when its id comes after it, from
// the spool), and a response to nothing in progress is dropped unread.
func (s *session) streamLarge(prefix []byte, rest io.Reader) (*wiremsg.Msg, error) {
	l := wiremsg.NewLongLine(prefix, rest, s.p.tempDir, bound.MaxWindow+streamBuffer)
	var w *bound.Walk
	var c *call
	dropped := ""
	m, err := l.Read(func(id json.RawMessage) func(*jsonstream.Reader) error {
		c, dropped = s.pendingCall(id)
		switch {
		case dropped != "":
			return func(j *jsonstream.Reader) error { return j.Value(jsonstream.Discard{}) }
		case c.method != methodToolsCall:
			return nil
		}
		w = s.newResultWalk(c)
		s.p.streamed.Add(1)
		return w.Read
	})
	switch {
	case w != nil:
		if err == nil {
			s.sendStreamed(c, w)
			return nil, nil
		}
	case err != nil:
		return nil, l.Bad(err)
	case dropped != "":
		s.drop(fromUpstream, dropped)
		return nil, nil
	case m.Has("result") && !m.IsCall():
		// The id came after the result: bound it from the spool.
		if c, _ = s.pendingCall(m.ID); c != nil && c.method == methodToolsCall {
			w = s.newResultWalk(c)
			s.p.streamed.Add(1)
			r, rerr := m.Big.Reader()
			if err = rerr; err == nil {
				err = w.Read(jsonstream.NewReader(bufio.NewReaderSize(r, w.ReadSize()), 1))
			}
			m.Release()
			if err == nil {
				s.sendStreamed(c, w)
				return nil, nil
			}
		}
	}
	if w == nil {
		return m, nil
	}
	// The walk failed: the call gets the error, the line is dropped.
	var bad *wiremsg.Bad
	errors.As(l.Bad(err), &bad)
	s.drop(fromUpstream, bad.Why)
	if c = s.take(callKey(c)); c != nil {
		answer := error(wiremsg.UpstreamError(bad))
		if err := c.ctx.Err(); err != nil {
			answer = err // cancelled by the client
		}
		c.cancel()
		s.respond(c.id, nil, answer)
	}
	return nil, nil
}

// newResultWalk starts the walk of a result for the call c.
func (s *session) newResultWalk(c *call) *bound.Walk {
	return s.p.bound.NewWalk(c.ctx, offloadCall(c.tool, c.id), s.p.nonce)
}

// pendingCall returns the forwarded request a response with id answers,
// or why the response is dropped.
func (s *session) pendingCall(id json.RawMessage) (*call, string) {
	key, ok := wiremsg.IDKey(s.clientID(id))
	if !ok {
		return nil, wiremsg.WhyID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.pending[key]; c != nil {
		return c, ""
	}
	if _, local := s.local[key]; local {
		return nil, dropLocal
	}
	return nil, dropUnknown
}

// sendStreamed answers the call with its result bounded; a result that
// cannot be bounded as it was streamed gets a JSON-RPC error.
func (s *session) sendStreamed(c *call, w *bound.Walk) {
	if c = s.take(callKey(c)); c == nil {
		return
	}
	res, err := w.Finish()
	c.cancel()
	if err != nil {
		s.drop(fromUpstream, wiremsg.WhyNotBounded)
	}
	// Sent off the read loop, like every bounded result, so a slow client
	// never stalls the upstream.
	s.work.Add(1)
	go func() {
		defer s.work.Done()
		if err != nil {
			s.respond(c.id, nil, streamError(err))
			return
		}
		_ = s.down.WriteMsg(s.wctx, &wiremsg.Msg{ID: c.id, Result: res})
	}()
}

// callKey is the id key of a call.
func callKey(c *call) string { k, _ := wiremsg.IDKey(c.id); return k }

// streamError is the JSON-RPC error a streamed call gets when it fails.
func streamError(err error) error {
	if errors.Is(err, bound.ErrNotBounded) {
		return wiremsg.UpstreamError(&wiremsg.Bad{Why: wiremsg.WhyNotBounded})
	}
	return err
}

// clientID returns the client's id for an id the upstream connection wrote
// (they differ only for the stand-ins of an SDK connection).
func (s *session) clientID(id json.RawMessage) json.RawMessage {
	if u, ok := s.up.(interface {
		ClientID(json.RawMessage) json.RawMessage
	}); ok && id != nil {
		return u.ClientID(id)
	}
	return id
}
