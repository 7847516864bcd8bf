package classify

import (
	"encoding/binary"
	"math/bits"
)

// maxDepth is the deepest nesting of arrays and objects that
// encoding/json.Valid accepts.
const maxDepth = 10000

// state is the position of the JSON scanner in the grammar.
type state uint8

const (
	stValue    state = iota // expecting a value (the start of the stream)
	stArrFirst              // after '[': a value or ']'
	stObjFirst              // after '{': a key or '}'
	stKey                   // after ',' in an object: a key
	stColon                 // after a key: ':'
	stEnd                   // after a value: ',', a closer, or trailing whitespace at top level
	stStr                   // inside a string
	stStrEsc                // after a backslash in a string
	stStrU                  // inside a \uXXXX escape; hex digits seen in scanner.hex
	stNeg                   // after '-'
	stZero                  // after a leading '0'
	stInt                   // in the integer digits 1-9...
	stDot                   // after '.'
	stFrac                  // in the fraction digits
	stExp                   // after 'e' or 'E'
	stExpSign               // after the exponent sign
	stExpDigit              // in the exponent digits
	stLit                   // inside true, false or null; rest expected in scanner.lit
	stErr                   // syntax error: not JSON
)

// scanner is a push-down state machine equivalent to the one behind
// encoding/json.Valid. The stack is a bitset: bit i-1 set means the
// container at depth i is an object, clear means an array.
type scanner struct {
	st    state
	key   bool   // the current string is an object key
	hex   uint8  // hex digits seen in the current \u escape
	top   byte   // first non-whitespace byte of the stream, 0 if none yet
	depth int32  // open containers
	lit   string // remaining bytes of the literal being read
	stack [(maxDepth + 63) / 64]uint64
}

// Byte classes for the scanner's fast paths.
const (
	cSpace = 1 << iota // JSON whitespace
	cStr               // may appear unescaped in a string: >= 0x20, not '"' or '\\'
	cDigit             // '0'-'9'
	cHex               // hex digit
)

var class = func() (t [256]uint8) {
	for i := range t {
		b := byte(i)
		if b >= 0x20 && b != '"' && b != '\\' {
			t[i] |= cStr
		}
		if '0' <= b && b <= '9' {
			t[i] |= cDigit | cHex
		}
		if 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F' {
			t[i] |= cHex
		}
	}
	t[' '] |= cSpace
	t['\t'] |= cSpace
	t['\r'] |= cSpace
	t['\n'] |= cSpace
	return t
}()

func isSpace(b byte) bool { return class[b]&cSpace != 0 }

// skipSpace returns the index of the first non-whitespace byte of p at or
// after i, or len(p).
func skipSpace(p []byte, i int) int {
	for i < len(p) && class[p[i]]&cSpace != 0 {
		i++
	}
	return i
}

const (
	lo7 = 0x0101010101010101
	hi7 = 0x8080808080808080
)

// stringEnd returns the index of the first byte of p at or after i that
// ends or escapes a string or is a control character (any byte that is not
// cStr), or len(p). It tests 8 bytes at a time: in the word mask, the
// lowest set bit marks exactly the first such byte, since borrows only
// carry towards higher bytes.
func stringEnd(p []byte, i int) int {
	for ; i+8 <= len(p); i += 8 {
		x := binary.LittleEndian.Uint64(p[i:])
		quote := x ^ (lo7 * '"')
		bslash := x ^ (lo7 * '\\')
		z := (quote - lo7) &^ quote
		z |= (bslash - lo7) &^ bslash
		z |= (x - lo7*0x20) &^ x
		if z &= hi7; z != 0 {
			return i + bits.TrailingZeros64(z)>>3
		}
	}
	for i < len(p) && class[p[i]]&cStr != 0 {
		i++
	}
	return i
}

// complete reports whether the bytes scanned so far form one complete
// JSON value followed only by whitespace.
func (s *scanner) complete() bool {
	if s.depth != 0 {
		return false
	}
	switch s.st {
	case stEnd, stZero, stInt, stFrac, stExpDigit:
		return true
	}
	return false
}

// literal starts matching the rest of true, false or null at p[i:]. When
// the whole rest is in p and matches, it is consumed at once.
func (s *scanner) literal(p []byte, i int, rest string) (state, int) {
	if i+len(rest) <= len(p) && string(p[i:i+len(rest)]) == rest {
		return stEnd, i + len(rest)
	}
	s.lit = rest
	return stLit, i
}

// scan advances the state machine over p. It stops early at a syntax
// error, leaving the scanner in stErr.
func (s *scanner) scan(p []byte) {
	st, depth := s.st, s.depth
	i := 0
loop:
	for i < len(p) {
		c := p[i]
		switch st {
		case stStr:
			if i = stringEnd(p, i); i == len(p) {
				break loop
			}
			c = p[i]
			i++
			switch c {
			case '"':
				if s.key {
					st = stColon
				} else {
					st = stEnd
				}
			case '\\':
				st = stStrEsc
			default:
				st = stErr
				break loop
			}

		case stEnd:
			if class[c]&cSpace != 0 {
				i = skipSpace(p, i+1)
				continue
			}
			if depth == 0 {
				st = stErr
				break loop
			}
			d := depth - 1
			obj := s.stack[d>>6]>>(d&63)&1 != 0
			i++
			switch {
			case c == ',':
				if obj {
					st = stKey
				} else {
					st = stValue
				}
			case c == '}' && obj, c == ']' && !obj:
				depth--
			default:
				st = stErr
				break loop
			}

		case stValue, stArrFirst:
			if class[c]&cSpace != 0 {
				i = skipSpace(p, i+1)
				continue
			}
			i++
			if depth == 0 {
				s.top = c
			}
			switch c {
			case '"':
				s.key = false
				st = stStr
			case '{', '[':
				if depth == maxDepth {
					st = stErr
					break loop
				}
				w, bit := depth>>6, uint64(1)<<(depth&63)
				if c == '{' {
					s.stack[w] |= bit
					st = stObjFirst
				} else {
					s.stack[w] &^= bit
					st = stArrFirst
				}
				depth++
			case ']':
				if st != stArrFirst {
					st = stErr
					break loop
				}
				depth--
				st = stEnd
			case '-':
				st = stNeg
			case '0':
				st = stZero
			case '1', '2', '3', '4', '5', '6', '7', '8', '9':
				st = stInt
			case 't':
				st, i = s.literal(p, i, "rue")
			case 'f':
				st, i = s.literal(p, i, "alse")
			case 'n':
				st, i = s.literal(p, i, "ull")
			default:
				st = stErr
				break loop
			}

		case stObjFirst, stKey:
			if class[c]&cSpace != 0 {
				i = skipSpace(p, i+1)
				continue
			}
			i++
			switch {
			case c == '"':
				s.key = true
				st = stStr
			case c == '}' && st == stObjFirst:
				depth--
				st = stEnd
			default:
				st = stErr
				break loop
			}

		case stColon:
			if class[c]&cSpace != 0 {
				i = skipSpace(p, i+1)
				continue
			}
			if c != ':' {
				st = stErr
				break loop
			}
			i++
			st = stValue

		case stStrEsc:
			i++
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				st = stStr
			case 'u':
				s.hex = 0
				st = stStrU
			default:
				st = stErr
				break loop
			}

		case stStrU:
			if class[c]&cHex == 0 {
				st = stErr
				break loop
			}
			i++
			s.hex++
			if s.hex == 4 {
				st = stStr
			}

		case stNeg:
			i++
			switch {
			case c == '0':
				st = stZero
			case '1' <= c && c <= '9':
				st = stInt
			default:
				st = stErr
				break loop
			}

		case stInt, stZero:
			if st == stInt {
				for i < len(p) && class[p[i]]&cDigit != 0 {
					i++
				}
				if i == len(p) {
					break loop
				}
				c = p[i]
			}
			switch c {
			case '.':
				i++
				st = stDot
			case 'e', 'E':
				i++
				st = stExp
			default:
				st = stEnd // c is not part of the number: rescan it
			}

		case stDot:
			if class[c]&cDigit == 0 {
				st = stErr
				break loop
			}
			i++
			st = stFrac

		case stFrac:
			for i < len(p) && class[p[i]]&cDigit != 0 {
				i++
			}
			if i == len(p) {
				break loop
			}
			if c = p[i]; c == 'e' || c == 'E' {
				i++
				st = stExp
			} else {
				st = stEnd
			}

		case stExp:
			i++
			switch {
			case c == '+' || c == '-':
				st = stExpSign
			case class[c]&cDigit != 0:
				st = stExpDigit
			default:
				st = stErr
				break loop
			}

		case stExpSign:
			if class[c]&cDigit == 0 {
				st = stErr
				break loop
			}
			i++
			st = stExpDigit

		case stExpDigit:
			for i < len(p) && class[p[i]]&cDigit != 0 {
				i++
			}
			if i < len(p) {
				st = stEnd
			}

		case stLit:
			if c != s.lit[0] {
				st = stErr
				break loop
			}
			i++
			s.lit = s.lit[1:]
			if len(s.lit) == 0 {
				st = stEnd
			}

		default: // stErr
			break loop
		}
	}
	s.st, s.depth = st, depth
}
