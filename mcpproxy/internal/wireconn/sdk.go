package wireconn

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

// SDK adapts an SDK connection (in-memory, or another transport) to the
// proxy's view. The SDK holds an id as an int64 or a string, so a request
// whose id it cannot hold exactly goes out under a stand-in string id, and
// the response's id is restored.
type SDK struct {
	c     mcp.Connection
	mu    sync.Mutex
	next  int64
	alias map[string]json.RawMessage // stand-in id key → the exact id
}

// NewSDK returns the proxy's view of the SDK connection c.
func NewSDK(c mcp.Connection) *SDK { return &SDK{c: c} }

// ReadMsg reads the next message, its id restored when it answers a
// request sent under a stand-in.
func (s *SDK) ReadMsg(ctx context.Context) (*wiremsg.Msg, error) {
	msg, err := s.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, &wiremsg.Bad{Code: jsonrpc.CodeParseError, Why: wiremsg.WhyParse}
	}
	m, err := wiremsg.Parse(b)
	if err != nil {
		return nil, err
	}
	if !m.IsCall() {
		key, _ := wiremsg.IDKey(m.ID)
		s.mu.Lock()
		if raw, ok := s.alias[key]; ok {
			m.ID = raw
			delete(s.alias, key)
		}
		s.mu.Unlock()
	}
	return m, nil
}

// WriteMsg writes m, under a stand-in id when the SDK cannot hold its id.
func (s *SDK) WriteMsg(ctx context.Context, m *wiremsg.Msg) error {
	if m.IsRequest() && !SDKExact(m.ID) {
		s.mu.Lock()
		s.next++
		stand := json.RawMessage(fmt.Sprintf(`"hybridctx-id-%d"`, s.next))
		if s.alias == nil {
			s.alias = map[string]json.RawMessage{}
		}
		key, _ := wiremsg.IDKey(stand)
		s.alias[key] = m.ID
		s.mu.Unlock()
		c := *m
		c.ID = stand
		m = &c
	}
	msg, err := jsonrpc.DecodeMessage(m.Encode())
	if err != nil {
		return err
	}
	return s.c.Write(ctx, msg)
}

// Close closes the SDK connection.
func (s *SDK) Close() error { return s.c.Close() }

// SDKExact reports whether the SDK's jsonrpc.ID holds id exactly: a string,
// or an integer written as the SDK writes it.
func SDKExact(id json.RawMessage) bool {
	if len(id) > 0 && id[0] == '"' {
		return true
	}
	v, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil && strconv.FormatInt(v, 10) == string(id)
}

// ClientIDOf returns the exact id a stand-in id stands for (id itself when
// it is none), forgetting the stand-in when forget is set.
func (s *SDK) ClientIDOf(id json.RawMessage, forget bool) json.RawMessage {
	key, ok := wiremsg.IDKey(id)
	if !ok {
		return id
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, ok := s.alias[key]
	if !ok {
		return id
	}
	if forget {
		delete(s.alias, key)
	}
	return raw
}
