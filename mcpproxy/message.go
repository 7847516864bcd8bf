package mcpproxy

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

// wmsg is one JSON-RPC message. Every field holds the bytes as they came
// (nil when the key is absent); a message the proxy builds itself sets them
// from encoded values.
type wmsg struct {
	id     json.RawMessage // a string or number; nil for a notification
	method json.RawMessage // a JSON string; nil for a response
	params json.RawMessage
	result json.RawMessage
	err    json.RawMessage // the error object of a response
	name   string          // method, decoded
	big    *bigValue       // params or result, spooled (a long message)
}

// isCall reports whether m is a request or notification (it has a method).
func (m *wmsg) isCall() bool { return m.method != nil }

// isRequest reports whether m is a request that expects a response.
func (m *wmsg) isRequest() bool { return m.method != nil && m.id != nil }

// encode returns m as one JSON object (no newline); a spooled value is
// read back into memory.
func (m *wmsg) encode() []byte {
	if m.big != nil {
		if err := m.load(); err != nil {
			return errorResponse(m.id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "hybridctx: " + whyTaken}).encode()
		}
	}
	head, tail := m.encodeAround(64 + len(m.params) + len(m.result) + len(m.err))
	return append(head, tail...)
}

// encodeAround returns the bytes of m before and after the value of its
// params or result (with room for n more bytes in the first).
func (m *wmsg) encodeAround(n int) (head, tail []byte) {
	b := make([]byte, 0, n+len(m.id)+len(m.method))
	b = append(b, `{"jsonrpc":"2.0"`...)
	if m.id != nil {
		b = append(append(b, `,"id":`...), m.id...)
	}
	if m.method != nil {
		b = append(append(b, `,"method":`...), m.method...)
		if m.params != nil || m.has("params") {
			b = append(append(b, `,"params":`...), m.params...)
		}
		return b, []byte("}")
	}
	if m.err != nil {
		return append(append(append(b, `,"error":`...), m.err...), '}'), nil
	}
	res := m.result
	if res == nil && !m.has("result") {
		res = json.RawMessage(`null`)
	}
	return append(append(b, `,"result":`...), res...), []byte("}")
}

// errorResponse returns the response carrying e to the request with id.
func errorResponse(id json.RawMessage, e *jsonrpc.Error) *wmsg {
	raw, err := json.Marshal(e)
	if err != nil { // a *jsonrpc.Error always encodes; keep a valid answer
		raw = json.RawMessage(`{"code":-32603,"message":"hybridctx: internal error"}`)
	}
	return &wmsg{id: id, err: raw}
}

// badMessage is why a line is not a message the proxy can act on. id is
// the line's id when one could be found (the sender can then be answered).
type badMessage struct {
	code int64
	why  string // categorical, never the line's content
	id   json.RawMessage
}

func (b *badMessage) Error() string { return b.why }

// rpcError is the JSON-RPC error that answers the bad message.
func (b *badMessage) rpcError() *jsonrpc.Error {
	return &jsonrpc.Error{Code: b.code, Message: "hybridctx: " + b.why}
}

// Reasons a line is refused (categorical, for the answer and the log).
const (
	whyParse    = "the message is not valid JSON"
	whyBatch    = "batches are not supported"
	whyObject   = "the message is not a JSON object"
	whyVersion  = `the message lacks "jsonrpc": "2.0"`
	whyID       = "the message id is not a string or a number"
	whyMethod   = "the method is not a string"
	whyShape    = "the response has neither a result nor an error"
	whyTooLarge = "the message exceeds the size limit"
	whyDup      = "a request with this id is already in progress"
	// A long upstream result that could not be bounded as it came (see
	// stream.go), and one that could not be taken at all.
	whyNotBounded = "the result could not be bounded"
	whyTaken      = "the message could not be taken"
	// A message whose connection failed before its end.
	whyCut = "the message ended before it was complete"
)

// parseMessage parses one line. A malformed line gives a *badMessage with
// the line's id when it has a usable one.
func parseMessage(line []byte) (*wmsg, error) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		return nil, &badMessage{code: jsonrpc.CodeParseError, why: whyParse, id: jsonstream.ScanID(line)}
	}
	switch line[0] {
	case '{':
	case '[':
		return nil, &badMessage{code: jsonrpc.CodeInvalidRequest, why: whyBatch}
	default:
		return nil, &badMessage{code: jsonrpc.CodeInvalidRequest, why: whyObject}
	}
	var m wmsg
	var version json.RawMessage
	err := eachField(line, func(key string, v json.RawMessage) {
		switch key {
		case "jsonrpc":
			version = v
		case "id":
			m.id = v
		case "method":
			m.method = v
		case "params":
			m.params = v
		case "result":
			m.result = v
		case "error":
			m.err = v
		}
	})
	if err != nil {
		return nil, &badMessage{code: jsonrpc.CodeParseError, why: whyParse}
	}
	return checkMessage(&m, version)
}

// checkMessage checks the fields of a message read from valid JSON (version
// is its "jsonrpc" value): m itself, or a *badMessage.
func checkMessage(m *wmsg, version json.RawMessage) (*wmsg, error) {
	if m.id != nil {
		// A null id (or any other) answers or asks nothing the proxy can
		// route, and cannot be answered.
		if _, ok := idKey(m.id); !ok {
			return nil, &badMessage{code: jsonrpc.CodeInvalidRequest, why: whyID}
		}
	}
	if string(version) != `"2.0"` {
		return nil, &badMessage{code: jsonrpc.CodeInvalidRequest, why: whyVersion, id: m.id}
	}
	if m.method != nil {
		if json.Unmarshal(m.method, &m.name) != nil {
			return nil, &badMessage{code: jsonrpc.CodeInvalidRequest, why: whyMethod, id: m.id}
		}
		return m, nil
	}
	if m.id == nil || (m.result == nil && !m.has("result")) == (m.err == nil && !m.has("error")) {
		return nil, &badMessage{code: jsonrpc.CodeInvalidRequest, why: whyShape, id: m.id}
	}
	return m, nil
}

// idKey returns the key two equal ids share: a string id by its value, a
// number by its value (1.5 and 1.50 are one id; 1 and 1.0 too), an
// integer of any length by its digits. ok is false for any other JSON.
func idKey(id json.RawMessage) (key string, ok bool) {
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

var errNotObject = errors.New("not a JSON object")

// eachField calls fn with every key of the JSON object obj (already known
// to be valid JSON) and its value's bytes, a subslice of obj. Keys compare
// exactly, unlike encoding/json's case-insensitive field matching.
func eachField(obj []byte, fn func(key string, v json.RawMessage)) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return errNotObject
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	for i < len(obj) {
		end := skipString(obj, i)
		var key string
		if err := json.Unmarshal(obj[i:end], &key); err != nil {
			return err
		}
		i = skipSpace(obj, end)
		i = skipSpace(obj, i+1) // the colon
		vend := skipValue(obj, i)
		fn(key, json.RawMessage(obj[i:vend]))
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] == '}' {
			return nil
		}
		i = skipSpace(obj, i+1) // the comma
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] ('"').
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the valid JSON value at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
