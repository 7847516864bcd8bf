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

// Byte classes for the scanner.
const (
	cSpace = 1 << iota // JSON whitespace
	cStr               // may appear unescaped in a string: >= 0x20, not '"' or '\\'
	cDigit             // '0'-'9'
	cHex               // hex digit
	cDelim             // ends a number or literal: whitespace, '"' or '{}[]:,'
	cEsc               // may follow a backslash in a string: one of "\/bfnrtu
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
	for _, b := range []byte(" \t\r\n\"{}[]:,") {
		t[b] |= cDelim
	}
	for _, b := range []byte(`"\/bfnrtu`) {
		t[b] |= cEsc
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
// error, leaving the scanner in stErr. Each group of states (structure,
// strings, numbers, literals) has its own loop, which returns when the
// state leaves its group, at a syntax error or at the end of p.
func (s *scanner) scan(p []byte) {
	st, depth := s.st, s.depth
	i := 0
	for i < len(p) && st != stErr {
		switch st {
		case stStr, stStrEsc, stStrU:
			st, i = s.scanString(p, i, st)
		case stNeg, stZero, stInt, stDot, stFrac, stExp, stExpSign, stExpDigit:
			st, i = scanNumber(p, i, st)
		case stLit:
			st, i = s.scanLiteral(p, i)
		default:
			st, i, depth = s.scanStructure(p, i, st, depth)
		}
	}
	s.st, s.depth = st, depth
}

// scanStructure runs the states between values: stValue, stArrFirst,
// stObjFirst, stKey, stColon and stEnd.
func (s *scanner) scanStructure(p []byte, i int, st state, depth int32) (state, int, int32) {
	for i < len(p) {
		c := p[i]
		if class[c]&cSpace != 0 {
			i = skipSpace(p, i+1)
			continue
		}
		switch st {
		case stEnd:
			if depth == 0 {
				return stErr, i, depth
			}
			d := depth - 1
			obj := s.stack[d>>6]>>(d&63)&1 != 0
			i++
			switch {
			case c == ',' && obj:
				st = stKey
			case c == ',':
				st = stValue
			case c == '}' && obj, c == ']' && !obj:
				depth--
			default:
				return stErr, i, depth
			}
		case stValue, stArrFirst:
			i++
			st, depth = s.value(c, st, depth)
			switch st {
			case stEnd, stObjFirst, stArrFirst:
			case stLit:
				st, i = s.literal(p, i, s.lit)
				if st == stLit {
					return st, i, depth
				}
			default:
				return st, i, depth
			}
		case stObjFirst, stKey:
			i++
			switch {
			case c == '"':
				s.key = true
				return stStr, i, depth
			case c == '}' && st == stObjFirst:
				depth--
				st = stEnd
			default:
				return stErr, i, depth
			}
		case stColon:
			if c != ':' {
				return stErr, i, depth
			}
			i++
			st = stValue
		default:
			return st, i, depth
		}
	}
	return st, i, depth
}

// value starts the value whose first byte is c, in state stValue or
// stArrFirst. For a literal it leaves the bytes still expected in s.lit
// and returns stLit.
func (s *scanner) value(c byte, st state, depth int32) (state, int32) {
	if depth == 0 {
		s.top = c
	}
	switch c {
	case '"':
		s.key = false
		return stStr, depth
	case '{', '[':
		if depth == maxDepth {
			return stErr, depth
		}
		w, bit := depth>>6, uint64(1)<<(depth&63)
		if c == '{' {
			s.stack[w] |= bit
			return stObjFirst, depth + 1
		}
		s.stack[w] &^= bit
		return stArrFirst, depth + 1
	case ']':
		if st != stArrFirst {
			return stErr, depth
		}
		return stEnd, depth - 1
	case '-':
		return stNeg, depth
	case '0':
		return stZero, depth
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return stInt, depth
	case 't':
		s.lit = "rue"
	case 'f':
		s.lit = "alse"
	case 'n':
		s.lit = "ull"
	default:
		return stErr, depth
	}
	return stLit, depth
}

// scanString runs the states inside a string: stStr, stStrEsc, stStrU.
func (s *scanner) scanString(p []byte, i int, st state) (state, int) {
	for i < len(p) {
		switch st {
		case stStr:
			if i = stringEnd(p, i); i == len(p) {
				return st, i
			}
			c := p[i]
			i++
			switch {
			case c == '"' && s.key:
				return stColon, i
			case c == '"':
				return stEnd, i
			case c == '\\':
				st = stStrEsc
			default:
				return stErr, i
			}
		case stStrEsc:
			c := p[i]
			i++
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				st = stStr
			case 'u':
				s.hex = 0
				st = stStrU
			default:
				return stErr, i
			}
		default: // stStrU
			if class[p[i]]&cHex == 0 {
				return stErr, i
			}
			i++
			if s.hex++; s.hex == 4 {
				st = stStr
			}
		}
	}
	return st, i
}

// scanNumber runs the states inside a number, from after its sign or
// first digit. It returns stEnd without consuming the first byte that is
// not part of the number, for the structure states to rescan.
func scanNumber(p []byte, i int, st state) (state, int) {
	for i < len(p) {
		c := p[i]
		switch st {
		case stNeg:
			i++
			switch {
			case c == '0':
				st = stZero
			case '1' <= c && c <= '9':
				st = stInt
			default:
				return stErr, i
			}
		case stInt, stZero:
			if st == stInt {
				if i = skipDigits(p, i); i == len(p) {
					return st, i
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
				return stEnd, i
			}
		case stDot, stExpSign:
			if class[c]&cDigit == 0 {
				return stErr, i
			}
			i++
			if st == stDot {
				st = stFrac
			} else {
				st = stExpDigit
			}
		case stFrac:
			if i = skipDigits(p, i); i == len(p) {
				return st, i
			}
			if c = p[i]; c != 'e' && c != 'E' {
				return stEnd, i
			}
			i++
			st = stExp
		case stExp:
			i++
			switch {
			case c == '+' || c == '-':
				st = stExpSign
			case class[c]&cDigit != 0:
				st = stExpDigit
			default:
				return stErr, i
			}
		default: // stExpDigit
			if i = skipDigits(p, i); i < len(p) {
				return stEnd, i
			}
		}
	}
	return st, i
}

// skipDigits returns the index of the first byte of p at or after i that is
// not a digit, or len(p).
func skipDigits(p []byte, i int) int {
	for i < len(p) && class[p[i]]&cDigit != 0 {
		i++
	}
	return i
}

// scanLiteral runs stLit: the rest of true, false or null, in s.lit.
func (s *scanner) scanLiteral(p []byte, i int) (state, int) {
	for i < len(p) {
		if p[i] != s.lit[0] {
			return stErr, i
		}
		i++
		if s.lit = s.lit[1:]; len(s.lit) == 0 {
			return stEnd, i
		}
	}
	return stLit, i
}
