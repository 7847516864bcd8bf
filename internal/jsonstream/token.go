package jsonstream

import (
	"encoding/binary"
	"math/bits"
)

// Tokenizer is the push tokenizer behind every JSON scan of the module:
// bytes are pushed to Scan in chunks split anywhere, and it stops at the
// events its caller watches (a value begins or ends, a key begins or ends)
// or at a syntax error. It accepts exactly what encoding/json.Valid
// accepts: RFC 8259's grammar, the whitespace set (space, tab, CR, LF) and
// the nesting limit MaxNesting; like json.Valid it does not check that
// strings hold valid UTF-8 (a caller that needs it checks it beside).
//
// Its memory is the struct (the nesting stack is a bitset of MaxNesting
// bits), whatever the length of the input, and Scan does not allocate.
// It reads strings 8 bytes at a time, and with no event watched it runs
// through a whole chunk in one call, in a loop of its own (validate).
//
// The zero value is ready for one value at depth 0, watching nothing.
type Tokenizer struct {
	st    tstate
	key   bool  // the current string is an object key
	hex   uint8 // hex digits seen in the current \u escape
	first byte  // first byte of the top-level value, 0 if none yet
	// One more than the deepest level at which each event is reported
	// (0: not watched, the zero value).
	wValue, wValueEnd, wKey, wKeyEnd int32

	depth int32  // containers open since the value began
	base  int32  // containers open around the value (NewReader's depth)
	ev    Event  // the event a sub-loop stopped at (with tStop)
	lit   string // remaining bytes of the literal being read
	stack [(MaxNesting + 63) / 64]uint64
}

// Event is what Scan stopped at.
type Event uint8

const (
	// None: Scan consumed the whole chunk without meeting a watched event.
	None Event = iota
	// Value: a value began; its first byte ('{', '[', '"', '-', a digit,
	// 't', 'f' or 'n') is the last byte consumed. Not reported for keys.
	Value
	// ValueEnd: a value ended. For a container, string or literal its
	// last byte is the last byte consumed; a number ends at the byte after
	// it, which is not consumed (a top-level number that ends with the
	// input has no ValueEnd: Complete says it is whole).
	ValueEnd
	// Key: the opening quote of an object key was the last byte consumed.
	Key
	// KeyEnd: the closing quote of an object key was the last byte
	// consumed; the key's bytes as written lie between Key and KeyEnd.
	KeyEnd
	// Bad: a syntax error at the byte after those consumed. The
	// tokenizer stays there: every later Scan returns 0, Bad, and Err
	// returns ErrBadJSON.
	Bad
)

// Stops is a set of events for Watch.
type Stops uint8

// The events Watch can ask Scan to stop at.
const (
	StopValue    Stops = 1 << iota // Value
	StopValueEnd                   // ValueEnd
	StopKey                        // Key
	StopKeyEnd                     // KeyEnd
)

// tstate is the tokenizer's position in the grammar.
type tstate uint8

const (
	tValue    tstate = iota // expecting a value (the start of the input)
	tArrFirst               // after '[': a value or ']'
	tObjFirst               // after '{': a key or '}'
	tKey                    // after ',' in an object: a key
	tColon                  // after a key: ':'
	tEnd                    // after a value: ',', a closer, or trailing whitespace at the top
	tStr                    // inside a string
	tStrEsc                 // after a backslash in a string
	tStrU                   // inside a \uXXXX escape; hex digits seen in Tokenizer.hex
	tNeg                    // after '-'
	tZero                   // after a leading '0'
	tInt                    // in the integer digits 1-9...
	tDot                    // after '.'
	tFrac                   // in the fraction digits
	tExp                    // after 'e' or 'E'
	tExpSign                // after the exponent sign
	tExpDigit               // in the exponent digits
	tLit                    // inside true, false or null; rest expected in Tokenizer.lit
	tErr                    // syntax error

	// tStop marks the state a sub-loop returns when it stops at a watched
	// event (in Tokenizer.ev): with tErr the largest state, one test ends
	// Scan's loop for both.
	tStop tstate = 0x80
)

// Reset readies t for a new value that starts inside depth open
// containers (0 for a whole document), which count against MaxNesting.
// It keeps what t watches.
func (t *Tokenizer) Reset(depth int) {
	t.st, t.key, t.hex, t.first, t.depth, t.lit = tValue, false, 0, 0, 0, ""
	t.base = int32(min(max(depth, 0), MaxNesting))
}

// Watch sets the events Scan stops at, for tokens at level at most level:
// level 0 is the value itself, 1 the members or elements of a top-level
// container (and its keys), and so on. Watch may be called between any
// two Scans.
func (t *Tokenizer) Watch(stops Stops, level int) {
	lv := int32(min(max(level, -1), MaxNesting)) + 1
	at := func(s Stops) int32 {
		if stops&s != 0 {
			return lv
		}
		return 0
	}
	t.wValue, t.wValueEnd, t.wKey, t.wKeyEnd = at(StopValue), at(StopValueEnd), at(StopKey), at(StopKeyEnd)
}

// Level returns the number of containers open at the position (after the
// last byte consumed), counted from the value's start.
func (t *Tokenizer) Level() int { return int(t.depth) }

// First returns the first non-whitespace byte of the input, 0 if none was
// scanned yet.
func (t *Tokenizer) First() byte { return t.first }

// Complete reports whether the bytes scanned so far form one complete
// value followed only by whitespace.
func (t *Tokenizer) Complete() bool {
	if t.depth != 0 {
		return false
	}
	switch t.st {
	case tEnd, tZero, tInt, tFrac, tExpDigit:
		return true
	}
	return false
}

// Err returns ErrBadJSON after a syntax error, else nil.
func (t *Tokenizer) Err() error {
	if t.st == tErr {
		return ErrBadJSON
	}
	return nil
}

// Scan consumes p up to the first watched event, which it returns with
// the number of bytes consumed (see Event for where each event leaves
// it), or the whole of p and None. After the top-level value, only
// whitespace is valid.
func (t *Tokenizer) Scan(p []byte) (n int, ev Event) {
	if t.wValue|t.wValueEnd|t.wKey|t.wKeyEnd == 0 {
		return t.validate(p)
	}
	st, depth := t.st, t.depth
	i := 0
	for i < len(p) && st < tErr {
		switch st {
		case tStr, tStrEsc, tStrU:
			// Events at the end of a string, number or literal are
			// checked here: the sub-loops stay as small as they can be
			// (checked inside them, they cost the scan of indented JSON
			// 9 to 12% of its speed).
			switch st, i = t.scanString(p, i, st); {
			case st == tEnd && depth < t.wValueEnd:
				st = t.stop(st, ValueEnd)
			case st == tColon && depth < t.wKeyEnd:
				st = t.stop(st, KeyEnd)
			}
		case tNeg, tZero, tInt, tDot, tFrac, tExp, tExpSign, tExpDigit:
			if st, i = scanNumber(p, i, st); st == tEnd && depth < t.wValueEnd {
				st = t.stop(st, ValueEnd)
			}
		case tLit:
			if st, i = t.scanLiteral(p, i); st == tEnd && depth < t.wValueEnd {
				st = t.stop(st, ValueEnd)
			}
		default:
			// A string, number or literal begun here returns at once
			// (scanStructure returns in such a state only when one began,
			// at its first byte).
			if st, i, depth = t.scanStructure(p, i, st, depth); st >= tStr && st < tErr {
				switch {
				case st == tStr && t.key:
					if depth < t.wKey {
						st = t.stop(st, Key)
					}
				case st != tLit && depth < t.wValue:
					st = t.stop(st, Value)
				}
			}
		}
	}
	if st&tStop != 0 {
		st, ev = st&^tStop, t.ev
	}
	t.st, t.depth = st, depth
	if st == tErr {
		return i, Bad
	}
	return i, ev
}

// stop returns st marked as stopped at ev.
func (t *Tokenizer) stop(st tstate, ev Event) tstate {
	t.ev = ev
	return st | tStop
}

// validate is Scan watching no event, with a structure loop of its own
// (validateStructure): with the events' checks in it, the classifier's
// scan of a 64 KiB JSON body took 8 to 15% more CPU time.
func (t *Tokenizer) validate(p []byte) (int, Event) {
	st, depth := t.st, t.depth
	i := 0
	for i < len(p) && st != tErr {
		switch st {
		case tStr, tStrEsc, tStrU:
			st, i = t.scanString(p, i, st)
		case tNeg, tZero, tInt, tDot, tFrac, tExp, tExpSign, tExpDigit:
			st, i = scanNumber(p, i, st)
		case tLit:
			st, i = t.scanLiteral(p, i)
		default:
			st, i, depth = t.validateStructure(p, i, st, depth)
		}
	}
	t.st, t.depth = st, depth
	if st == tErr {
		return i, Bad
	}
	return i, None
}

// validateStructure is scanStructure without events.
func (t *Tokenizer) validateStructure(p []byte, i int, st tstate, depth int32) (tstate, int, int32) {
	for i < len(p) {
		c := p[i]
		if class[c]&cSpace != 0 {
			i = skipSpace(p, i+1)
			continue
		}
		switch st {
		case tEnd:
			if depth == 0 {
				return tErr, i, depth
			}
			d := depth - 1
			obj := t.stack[d>>6]>>(d&63)&1 != 0
			i++
			switch {
			case c == ',' && obj:
				st = tKey
			case c == ',':
				st = tValue
			case c == '}' && obj, c == ']' && !obj:
				depth--
			default:
				return tErr, i - 1, depth
			}
		case tValue, tArrFirst:
			i++
			st, depth = t.value(c, st, depth)
			switch st {
			case tEnd, tObjFirst, tArrFirst:
			case tLit:
				if st, i = t.literal(p, i); st == tLit {
					return st, i, depth
				}
			case tErr:
				return st, i - 1, depth
			default:
				return st, i, depth
			}
		case tObjFirst, tKey:
			i++
			switch {
			case c == '"':
				t.key = true
				return tStr, i, depth
			case c == '}' && st == tObjFirst:
				depth--
				st = tEnd
			default:
				return tErr, i - 1, depth
			}
		case tColon:
			if c != ':' {
				return tErr, i, depth
			}
			i++
			st = tValue
		default:
			return st, i, depth
		}
	}
	return st, i, depth
}

// Byte classes.
const (
	cSpace = 1 << iota // JSON whitespace
	cDigit             // '0'-'9'
	cHex               // hex digit
	cStr               // may appear unescaped in a string: >= 0x20, not '"' or '\\'
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
	for _, b := range []byte(" \t\r\n") {
		t[b] |= cSpace
	}
	return t
}()

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
// ends or escapes a string or is a control character, or len(p). It tests
// 8 bytes at a time: in the word mask, the lowest set bit marks exactly
// the first such byte, since borrows only carry towards higher bytes.
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

// scanStructure runs the states between values: tValue, tArrFirst,
// tObjFirst, tKey, tColon and tEnd.
func (t *Tokenizer) scanStructure(p []byte, i int, st tstate, depth int32) (tstate, int, int32) {
	for i < len(p) {
		c := p[i]
		if class[c]&cSpace != 0 {
			i = skipSpace(p, i+1)
			continue
		}
		switch st {
		case tEnd:
			if depth == 0 {
				return tErr, i, depth
			}
			d := depth - 1
			obj := t.stack[d>>6]>>(d&63)&1 != 0
			i++
			switch {
			case c == ',' && obj:
				st = tKey
			case c == ',':
				st = tValue
			case c == '}' && obj, c == ']' && !obj:
				depth--
				if depth < t.wValueEnd {
					return t.stop(tEnd, ValueEnd), i, depth
				}
			default:
				return tErr, i - 1, depth
			}
		case tValue, tArrFirst:
			i++
			level := depth
			st, depth = t.value(c, st, depth)
			switch st {
			case tEnd: // ']' closed an empty array
				if depth < t.wValueEnd {
					return t.stop(st, ValueEnd), i, depth
				}
			case tObjFirst, tArrFirst:
				if level < t.wValue {
					return t.stop(st, Value), i, depth
				}
			case tLit:
				if level < t.wValue {
					return t.stop(st, Value), i, depth
				}
				if st, i = t.literal(p, i); st == tLit {
					return st, i, depth
				}
				if depth < t.wValueEnd {
					return t.stop(st, ValueEnd), i, depth
				}
			case tErr:
				return st, i - 1, depth
			default: // a string or a number began: Scan checks the event
				return st, i, depth
			}
		case tObjFirst, tKey:
			i++
			switch {
			case c == '"': // a key began: Scan checks the event
				t.key = true
				return tStr, i, depth
			case c == '}' && st == tObjFirst:
				depth--
				st = tEnd
				if depth < t.wValueEnd {
					return t.stop(st, ValueEnd), i, depth
				}
			default:
				return tErr, i - 1, depth
			}
		case tColon:
			if c != ':' {
				return tErr, i, depth
			}
			i++
			st = tValue
		default:
			return st, i, depth
		}
	}
	return st, i, depth
}

// value starts the value whose first byte is c, in state tValue or
// tArrFirst. For a literal it leaves the bytes still expected in t.lit
// and returns tLit.
func (t *Tokenizer) value(c byte, st tstate, depth int32) (tstate, int32) {
	if depth == 0 {
		t.first = c
	}
	switch c {
	case '"':
		t.key = false
		return tStr, depth
	case '{', '[':
		if depth+t.base >= MaxNesting {
			return tErr, depth
		}
		w, bit := depth>>6, uint64(1)<<(depth&63)
		if c == '{' {
			t.stack[w] |= bit
			return tObjFirst, depth + 1
		}
		t.stack[w] &^= bit
		return tArrFirst, depth + 1
	case ']':
		if st != tArrFirst {
			return tErr, depth
		}
		return tEnd, depth - 1
	case '-':
		return tNeg, depth
	case '0':
		return tZero, depth
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return tInt, depth
	case 't':
		t.lit = "rue"
	case 'f':
		t.lit = "alse"
	case 'n':
		t.lit = "ull"
	default:
		return tErr, depth
	}
	return tLit, depth
}

// literal consumes the rest of true, false or null (in t.lit) at p[i:]
// at once when all of it is there and matches; else it leaves it to
// scanLiteral.
func (t *Tokenizer) literal(p []byte, i int) (tstate, int) {
	if rest := t.lit; i+len(rest) <= len(p) && string(p[i:i+len(rest)]) == rest {
		return tEnd, i + len(rest)
	}
	return tLit, i
}

// scanString runs the states inside a string: tStr, tStrEsc, tStrU.
func (t *Tokenizer) scanString(p []byte, i int, st tstate) (tstate, int) {
	for i < len(p) {
		switch st {
		case tStr:
			if i = stringEnd(p, i); i == len(p) {
				return st, i
			}
			c := p[i]
			i++
			switch {
			case c == '"' && t.key:
				return tColon, i
			case c == '"':
				return tEnd, i
			case c == '\\':
				st = tStrEsc
			default:
				return tErr, i - 1
			}
		case tStrEsc:
			c := p[i]
			i++
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				st = tStr
			case 'u':
				t.hex = 0
				st = tStrU
			default:
				return tErr, i - 1
			}
		default: // tStrU
			if class[p[i]]&cHex == 0 {
				return tErr, i
			}
			i++
			if t.hex++; t.hex == 4 {
				st = tStr
			}
		}
	}
	return st, i
}

// scanNumber runs the states inside a number, from after its sign or
// first digit. It returns tEnd without consuming the first byte that is
// not part of the number, for the structure states to rescan.
func scanNumber(p []byte, i int, st tstate) (tstate, int) {
	for i < len(p) {
		c := p[i]
		switch st {
		case tNeg:
			i++
			switch {
			case c == '0':
				st = tZero
			case '1' <= c && c <= '9':
				st = tInt
			default:
				return tErr, i - 1
			}
		case tInt, tZero:
			if st == tInt {
				if i = skipDigits(p, i); i == len(p) {
					return st, i
				}
				c = p[i]
			}
			switch c {
			case '.':
				i++
				st = tDot
			case 'e', 'E':
				i++
				st = tExp
			default:
				return tEnd, i
			}
		case tDot, tExpSign:
			if class[c]&cDigit == 0 {
				return tErr, i
			}
			i++
			if st == tDot {
				st = tFrac
			} else {
				st = tExpDigit
			}
		case tFrac:
			if i = skipDigits(p, i); i == len(p) {
				return st, i
			}
			if c = p[i]; c != 'e' && c != 'E' {
				return tEnd, i
			}
			i++
			st = tExp
		case tExp:
			i++
			switch {
			case c == '+' || c == '-':
				st = tExpSign
			case class[c]&cDigit != 0:
				st = tExpDigit
			default:
				return tErr, i - 1
			}
		default: // tExpDigit
			if i = skipDigits(p, i); i < len(p) {
				return tEnd, i
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

// scanLiteral runs tLit: the rest of true, false or null, in t.lit.
func (t *Tokenizer) scanLiteral(p []byte, i int) (tstate, int) {
	for i < len(p) {
		if p[i] != t.lit[0] {
			return tErr, i
		}
		i++
		if t.lit = t.lit[1:]; len(t.lit) == 0 {
			return tEnd, i
		}
	}
	return tLit, i
}
