package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

// Responses: what the client gets back for the requests the proxy forwarded
// or served.

// upstreamResponse passes the first response to each forwarded request,
// rewritten where the proxy changes it, under the client's own id; every
// other response (a second one, one for a request the proxy serves, one for
// an id never forwarded) is dropped.
func (s *session) upstreamResponse(m *wiremsg.Msg) {
	key, _ := wiremsg.IDKey(m.ID)
	c := s.take(key)
	if c == nil {
		m.Release()
		s.mu.Lock()
		_, local := s.local[key]
		s.mu.Unlock()
		if local {
			s.drop(fromUpstream, dropLocal)
		} else {
			s.drop(fromUpstream, dropUnknown)
		}
		return
	}
	m.ID = c.id
	if rewritten[c.method] && m.Load() != nil {
		c.cancel()
		s.respond(c.id, nil, errTaken)
		return
	}
	switch c.method {
	case methodInitialize, methodDiscover:
		if m.Err == nil {
			m.Result = withCapabilities(m.Result)
		}
	case methodToolsList:
		switch {
		case isMethodNotFound(m.Err):
			m.Err, m.Result = nil, localList("tools", s.p.toolsJSON...)
		case m.Err == nil:
			m.Result = withReadTools(m.Result, s.p.toolsJSON, s.p.read.set.Has)
		}
	case methodTemplatesList:
		switch {
		case isMethodNotFound(m.Err):
			m.Err, m.Result = nil, localList("resourceTemplates", s.p.tmplJSON)
		case m.Err == nil:
			m.Result = withTemplate(m.Result, s.p.tmplJSON)
		}
	case methodResourcesList:
		if isMethodNotFound(m.Err) {
			m.Err, m.Result = nil, localList("resources")
		}
	case methodToolsCall:
		if m.Err == nil {
			// Bound off the read loop, so other messages keep flowing.
			s.work.Add(1)
			go func() {
				defer s.work.Done()
				s.boundAndSend(c, m)
			}()
			return
		}
	}
	c.cancel()
	_ = s.down.WriteMsg(s.wctx, m)
}

func (s *session) boundAndSend(c *call, m *wiremsg.Msg) {
	defer c.cancel()
	res, err := s.p.bound.Wire(c.ctx, offloadCall(c.tool, c.id), m.Result)
	if err != nil {
		s.respond(c.id, nil, err)
		return
	}
	m.Result = res
	_ = s.down.WriteMsg(s.wctx, m)
}

// offloadCall is the Call an offload of a tools/call result records: the
// tool's name and the request id (a string id's value, a number as
// written), each cut to artifact.MaxCallFieldLen bytes on a rune boundary,
// so a client's overlong id or name never costs it its result.
func offloadCall(tool string, id json.RawMessage) hybridctx.Call {
	s := string(id)
	var str string
	if len(id) > 0 && id[0] == '"' && json.Unmarshal(id, &str) == nil {
		s = str
	}
	return hybridctx.Call{Tool: artifact.TruncateUTF8(tool, artifact.MaxCallFieldLen), ID: artifact.TruncateUTF8(s, artifact.MaxCallFieldLen)}
}

// failPending answers every forwarded request that will get no response.
func (s *session) failPending() {
	s.mu.Lock()
	calls := s.pending
	s.pending = map[string]*call{}
	s.mu.Unlock()
	for _, c := range calls {
		c.cancel()
		s.respond(c.id, nil, errUpstreamGone)
	}
}

// respond answers the client request with id: result encoded, or err as a
// JSON-RPC error.
func (s *session) respond(id json.RawMessage, result any, err error) {
	m := &wiremsg.Msg{ID: id}
	if err == nil {
		raw, merr := json.Marshal(result)
		if merr == nil {
			m.Result = raw
		}
		err = merr
	}
	if err != nil {
		var we *jsonrpc.Error
		errors.As(wireError(err), &we)
		m = wiremsg.ErrorResponse(id, we)
	}
	_ = s.down.WriteMsg(s.wctx, m)
}

var (
	errUpstreamGone = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the upstream MCP server exited"}
	errNotSent      = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the request could not be sent to the upstream MCP server"}
)

// wireError turns an error into the JSON-RPC error the client sees: the
// error itself when it is one, else a categorical message (never error text,
// which may name storage paths).
func wireError(err error) error {
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		return we
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: request cancelled"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: internal error"}
}

// isMethodNotFound reports whether a response's error object is
// "method not found".
func isMethodNotFound(raw json.RawMessage) bool {
	var e struct {
		Code *int64 `json:"code"`
	}
	return raw != nil && json.Unmarshal(raw, &e) == nil && e.Code != nil && *e.Code == jsonrpc.CodeMethodNotFound
}

// mimeCache remembers the MIME types of stored binary payloads, bounded, so
// reads can label them; it is a hint only.
type mimeCache struct {
	mu sync.Mutex
	m  map[artifact.Ref]string
}

const maxMIMEs = 4096

func (c *mimeCache) put(ref artifact.Ref, mime string) {
	if mime == mimeText || mime == mimeJSON || mime == mimeBinary {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[ref]; !ok && len(c.m) >= maxMIMEs {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[ref] = mime
}

func (c *mimeCache) get(ref artifact.Ref) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[ref]
}

// rewritten are the methods whose results the proxy reads whole; any other
// result passes as it came, a spooled one in pieces.
var rewritten = map[string]bool{methodInitialize: true, methodDiscover: true, methodToolsList: true,
	methodTemplatesList: true, methodResourcesList: true, methodToolsCall: true}

// errTaken answers a request whose long message could not be read back.
var errTaken = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: " + wiremsg.WhyTaken}
