// Package wiremsg is mcpproxy's own view of a JSON-RPC 2.0 message on the
// wire: every id and value kept as the bytes its sender wrote (Msg), a
// line parsed with a categorical refusal (Parse, Bad), and a long line read
// in bounded memory with its long value spooled (LongLine, large.go). It
// knows nothing of sessions: what a proxy does with a message is
// mcpproxy's.
package wiremsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
)

// The proxy's own view of a JSON-RPC 2.0 message. The SDK's jsonrpc.ID
// holds an id as an int64 or a string (an id of 1.5 becomes 1, a large
// integer loses digits), so the proxy keeps every id as the exact bytes its
// sender wrote and answers with those bytes.

// Msg is one JSON-RPC message. Every field holds the bytes as they came
// (nil when the key is absent); a message the proxy builds itself sets them
// from encoded values.
type Msg struct {
	ID     json.RawMessage // a string or number; nil for a notification
	Method json.RawMessage // a JSON string; nil for a response
	Params json.RawMessage
	Result json.RawMessage
	Err    json.RawMessage // the error object of a response
	Name   string          // method, decoded
	Big    *Spooled        // params or result, spooled (a long message)
}

// IsCall reports whether m is a request or notification (it has a method).
func (m *Msg) IsCall() bool { return m.Method != nil }

// IsRequest reports whether m is a request that expects a response.
func (m *Msg) IsRequest() bool { return m.Method != nil && m.ID != nil }

// Encode returns m as one JSON object (no newline); a spooled value is
// read back into memory.
func (m *Msg) Encode() []byte {
	if m.Big != nil {
		if err := m.Load(); err != nil {
			return ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: " + WhyTaken}).Encode()
		}
	}
	head, tail := m.EncodeAround(64 + len(m.Params) + len(m.Result) + len(m.Err))
	return append(head, tail...)
}

// EncodeAround returns the bytes of m before and after the value of its
// params or result (with room for n more bytes in the first).
func (m *Msg) EncodeAround(n int) (head, tail []byte) {
	b := make([]byte, 0, n+len(m.ID)+len(m.Method))
	b = append(b, `{"jsonrpc":"2.0"`...)
	if m.ID != nil {
		b = append(append(b, `,"id":`...), m.ID...)
	}
	if m.Method != nil {
		b = append(append(b, `,"method":`...), m.Method...)
		if m.Params != nil || m.Has("params") {
			b = append(append(b, `,"params":`...), m.Params...)
		}
		return b, []byte("}")
	}
	if m.Err != nil {
		return append(append(append(b, `,"error":`...), m.Err...), '}'), nil
	}
	res := m.Result
	if res == nil && !m.Has("result") {
		res = json.RawMessage(`null`)
	}
	return append(append(b, `,"result":`...), res...), []byte("}")
}

// ErrorResponse returns the response carrying e to the request with id.
func ErrorResponse(id json.RawMessage, e *jsonrpc.Error) *Msg {
	raw, err := json.Marshal(e)
	if err != nil { // a *jsonrpc.Error always encodes; keep a valid answer
		raw = json.RawMessage(`{"code":-32603,"message":"hybridctx: internal error"}`)
	}
	return &Msg{ID: id, Err: raw}
}

// MethodInitialize is the MCP method that opens a session: its response
// tells the protocol version, and its refusal tells a server of the
// 2024-11-05 transport.
const MethodInitialize = "initialize"

// Bad is why a line is not a message the proxy can act on. id is
// the line's id when one could be found (the sender can then be answered).
type Bad struct {
	Code int64
	Why  string // categorical, never the line's content
	ID   json.RawMessage
}

func (b *Bad) Error() string { return b.Why }

// RPCError is the JSON-RPC error that answers the bad message.
func (b *Bad) RPCError() *jsonrpc.Error {
	return &jsonrpc.Error{Code: b.Code, Message: "hybridctx: " + b.Why}
}

// ErrMalformed is matched (errors.Is) by every *Bad: a message dropped
// while its connection goes on (mcpproxy.ErrMalformedMessage).
var ErrMalformed = errors.New("mcpproxy: a malformed message was dropped")

// Is makes every Bad match ErrMalformed.
func (b *Bad) Is(target error) bool { return target == ErrMalformed }

// Reasons a line is refused (categorical, for the answer and the log).
const (
	WhyParse    = "the message is not valid JSON"
	WhyBatch    = "batches are not supported"
	WhyObject   = "the message is not a JSON object"
	WhyVersion  = `the message lacks "jsonrpc": "2.0"`
	WhyID       = "the message id is not a string or a number"
	WhyMethod   = "the method is not a string"
	WhyShape    = "the response has neither a result nor an error"
	WhyTooLarge = "the message exceeds the size limit"
	WhyDup      = "a request with this id is already in progress"
	// A long upstream result that could not be bounded as it came (see
	// stream.go), and one that could not be taken at all.
	WhyNotBounded = "the result could not be bounded"
	WhyTaken      = "the message could not be taken"
	// A message whose connection failed before its end.
	WhyCut = "the message ended before it was complete"
)

// Parse parses one line. A malformed line gives a *Bad with
// the line's id when it has a usable one.
func Parse(line []byte) (*Msg, error) {
	line = bytes.TrimSpace(line)
	var m Msg
	var version json.RawMessage
	err := jsonstream.EachMember(line, func(key, v []byte) {
		name := key[1 : len(key)-1]
		if bytes.IndexByte(name, '\\') >= 0 { // keys compare exactly once unescaped
			var s string
			_ = json.Unmarshal(key, &s)
			name = []byte(s)
		}
		switch string(name) {
		case "jsonrpc":
			version = v
		case "id":
			m.ID = v
		case "method":
			m.Method = v
		case "params":
			m.Params = v
		case "result":
			m.Result = v
		case "error":
			m.Err = v
		}
	})
	switch {
	case errors.Is(err, jsonstream.ErrNotObject) && line[0] == '[':
		return nil, &Bad{Code: jsonrpc.CodeInvalidRequest, Why: WhyBatch}
	case errors.Is(err, jsonstream.ErrNotObject):
		return nil, &Bad{Code: jsonrpc.CodeInvalidRequest, Why: WhyObject}
	case err != nil:
		return nil, &Bad{Code: jsonrpc.CodeParseError, Why: WhyParse, ID: jsonstream.ScanID(line)}
	}
	return Check(&m, version)
}

// Check checks the fields of a message read from valid JSON (version
// is its "jsonrpc" value): m itself, or a *Bad.
func Check(m *Msg, version json.RawMessage) (*Msg, error) {
	if m.ID != nil {
		// A null id (or any other) answers or asks nothing the proxy can
		// route, and cannot be answered.
		if _, ok := IDKey(m.ID); !ok {
			return nil, &Bad{Code: jsonrpc.CodeInvalidRequest, Why: WhyID}
		}
	}
	if string(version) != `"2.0"` {
		return nil, &Bad{Code: jsonrpc.CodeInvalidRequest, Why: WhyVersion, ID: m.ID}
	}
	if m.Method != nil {
		if json.Unmarshal(m.Method, &m.Name) != nil {
			return nil, &Bad{Code: jsonrpc.CodeInvalidRequest, Why: WhyMethod, ID: m.ID}
		}
		return m, nil
	}
	if m.ID == nil || (m.Result == nil && !m.Has("result")) == (m.Err == nil && !m.Has("error")) {
		return nil, &Bad{Code: jsonrpc.CodeInvalidRequest, Why: WhyShape, ID: m.ID}
	}
	return m, nil
}

// IDKey returns the key two equal ids share: a string id by its value, a
// number by its value (1.5 and 1.50 are one id; 1 and 1.0 too), an
// integer of any length by its digits. ok is false for any other JSON.
func IDKey(id json.RawMessage) (key string, ok bool) {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return "", false
	}
	switch c := id[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(id, &s) != nil {
			return "", false
		}
		return "s" + s, true
	case c == '-' || c >= '0' && c <= '9':
		if !json.Valid(id) {
			return "", false
		}
		if !bytes.ContainsAny(id, ".eE") {
			if string(id) == "-0" {
				return "n0", true
			}
			return "n" + string(id), true
		}
		f, err := strconv.ParseFloat(string(id), 64)
		if err != nil { // out of range: compare as written
			return "x" + string(id), true
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return "n" + strconv.FormatInt(int64(f), 10), true
		}
		return "f" + strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return "", false
}

// ErrCutShort answers a request whose response's connection failed before
// the response's end.
var ErrCutShort = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the upstream's response ended before it was complete"}

// UpstreamError is the error a client request gets when the upstream's
// response to it could not be taken (bad says why).
func UpstreamError(bad *Bad) *jsonrpc.Error {
	switch bad.Why {
	case WhyTooLarge:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the upstream's response exceeds the message size limit"}
	case WhyNotBounded:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the upstream's result could not be bounded"}
	case WhyTaken:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: internal error"}
	case WhyCut:
		return ErrCutShort
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: the upstream's response was not a valid JSON-RPC message"}
}
