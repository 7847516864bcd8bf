package jsonstream

import (
	"bytes"
	byteorder "encoding/binary"
	"encoding/json"
)

// MaxIDBytes bounds the id the scanner keeps; a longer one is not used.
const MaxIDBytes = 1024

// IDScanner finds the top-level "id" of a JSON object fed to it in pieces,
// in constant memory, without validating the rest: it lets the proxy answer
// a message it cannot take whole (over the size limit, or not valid JSON).
//
// It is the one JSON scan of the module that does not use the Tokenizer,
// by its contract rather than for speed: it finds the id of a line that is
// not valid JSON wherever the id is, after the first syntax error too
// (TestLongClientLinesRefused: `{…,}},"id":"bad"}` is answered under
// "bad"), and the Tokenizer stops at the first syntax error.
type IDScanner struct {
	depth     int
	inStr     bool
	esc       bool
	state     uint8
	key       []byte // the current top-level key, while it may be "id"
	keyIsID   bool
	capturing bool
	val       []byte
	id        json.RawMessage
	done      bool
}

// States at depth 1.
const (
	scanKey     uint8 = iota // before a key or the closing brace
	scanInKey                // inside a key
	scanColon                // after a key
	scanValue                // after the colon
	scanInValue              // inside a value
)

// Feed scans the next bytes of the message.
func (s *IDScanner) Feed(p []byte) {
	for i := 0; i < len(p); i++ {
		if s.done {
			return
		}
		if s.inStr && !s.esc && !s.capturing && s.state != scanInKey {
			// Inside a string nothing but its end matters: skip to the
			// next quote or backslash (or control character) at once.
			if i += plainRaw(p[i:]); i == len(p) {
				return
			}
		}
		c := p[i]
		if s.capturing {
			s.val = append(s.val, c)
			if len(s.val) > MaxIDBytes+1 {
				s.capturing, s.val = false, nil
			}
		}
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
				if s.depth == 1 && s.state == scanInKey {
					s.state = scanColon
					s.keyIsID = string(s.key) == "id"
				}
				continue
			}
			if s.depth == 1 && s.state == scanInKey && len(s.key) < 3 {
				s.key = append(s.key, c)
			} else if s.depth == 1 && s.state == scanInKey {
				s.key = append(s.key[:0], 'x', 'x', 'x')
			}
			continue
		}
		s.token(c)
	}
}

// token handles one byte outside strings.
func (s *IDScanner) token(c byte) {
	switch c {
	case ' ', '\t', '\n', '\r':
		return
	case '"':
		s.inStr = true
		switch {
		case s.depth == 1 && s.state == scanKey:
			s.state, s.key = scanInKey, s.key[:0]
		case s.depth == 1 && s.state == scanValue:
			s.startValue(c)
		}
	case '{', '[':
		if s.depth == 0 {
			s.depth, s.state, s.done = 1, scanKey, c != '{'
			return
		}
		if s.depth == 1 && s.state == scanValue {
			s.startValue(c)
		}
		s.depth++
	case '}', ']':
		s.depth--
		if s.depth == 0 {
			s.endValue()
			s.done = true
		}
	case ':':
		if s.depth == 1 && s.state == scanColon {
			s.state = scanValue
		}
	case ',':
		if s.depth == 1 {
			s.endValue()
			s.state = scanKey
		}
	default:
		if s.depth == 1 && s.state == scanValue {
			s.startValue(c)
		}
	}
}

func (s *IDScanner) startValue(c byte) {
	s.state = scanInValue
	if s.keyIsID {
		s.capturing, s.val = true, append(s.val[:0], c)
	}
}

// endValue ends a top-level value at its terminating ',' or '}'.
func (s *IDScanner) endValue() {
	if !s.capturing {
		return
	}
	s.capturing = false
	v := bytes.TrimSpace(s.val[:len(s.val)-1])
	if validID(v) {
		s.id = append(json.RawMessage(nil), v...)
	}
}

// validID reports whether v is a JSON string or number: an id a JSON-RPC
// answer can carry.
func validID(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	switch c := v[0]; {
	case c == '"':
		var s string
		return json.Unmarshal(v, &s) == nil
	case c == '-' || c >= '0' && c <= '9':
		return json.Valid(v)
	}
	return false
}

// ID returns the top-level id found so far when it is a string or a
// number, else nil.
func (s *IDScanner) ID() json.RawMessage { return s.id }

// Done reports whether the top-level value has ended (nothing fed after
// it is scanned).
func (s *IDScanner) Done() bool { return s.done }

// ScanID returns the top-level id of a (possibly malformed) JSON object
// when it is a string or a number, else nil.
func ScanID(line []byte) json.RawMessage {
	var s IDScanner
	s.Feed(line)
	return s.id
}

// plainRaw returns how many bytes at the start of b a string holds as
// they are: not '"', '\\' or a control character.
func plainRaw(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := byteorder.LittleEndian.Uint64(b[i:])
		if (hasLess(x, 0x20)|hasZero(x^0x2222222222222222)|hasZero(x^0x5c5c5c5c5c5c5c5c))&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
			break
		}
	}
	return i
}
