package classify

import (
	"encoding/binary"
	"math/bits"
)

// The fast path: whole tokens at a time.
//
// The byte-wise machine in scan.go can stop and resume at any byte, which
// costs a dispatch on its state for every token and a function return at
// every change of token kind. Most of a chunk, though, lies far from both
// of its ends, where a token can be read whole. fast reads such tokens in
// one function with the grammar's states as code positions (goto labels),
// the position and depth in registers, and strings and whitespace 8 bytes
// at a time.
//
// It takes a token only when the token lies whole inside p and is valid,
// including the byte after a number, which ends it. At anything else (the
// end of p inside a token, a syntax error, the depth limit) it stops
// before that token, in the state the byte-wise machine would have reached
// there, and the byte-wise machine takes over: it reports the error or
// carries the token across the chunk boundary. So fast needs no error
// handling of its own, and the verdict is the byte-wise machine's by
// construction; fast only decides how much of p the byte-wise machine
// never has to see.

const spaces8 = lo7 * ' '

// fast consumes whole tokens of p from i, starting in one of the states
// between tokens (stValue, stArrFirst, stObjFirst, stKey, stColon, stEnd),
// and returns the state, position and depth before the first token it did
// not take. It never returns stErr.
func (s *scanner) fast(p []byte, i int, st state, depth int32) (state, int, int32) {
	var (
		c   byte
		j   int
		obj bool // the innermost open container is an object
	)
	if depth > 0 {
		d := depth - 1
		obj = s.stack[d>>6]>>(d&63)&1 != 0
	}
	switch st {
	case stValue:
		goto value
	case stArrFirst:
		goto arrFirst
	case stObjFirst:
		goto objFirst
	case stKey:
		goto key
	case stColon:
		goto colon
	case stEnd:
		goto end
	}
	return st, i, depth

arrFirst:
	if i = fastSpace(p, i); i >= len(p) {
		return stArrFirst, i, depth
	}
	if p[i] == ']' {
		i++
		goto pop
	}
	// Apart from ']', stArrFirst and stValue accept the same bytes.
	goto valueTok

value:
	if i = fastSpace(p, i); i >= len(p) {
		return stValue, i, depth
	}
valueTok:
	c = p[i]
	if depth == 0 {
		s.top = c
	}
	switch c {
	case '"':
		if j = fastString(p, i+1); j < 0 {
			return stValue, i, depth
		}
		i = j
		goto end
	case '{', '[':
		if depth == maxDepth {
			return stValue, i, depth
		}
		w, bit := depth>>6, uint64(1)<<(depth&63)
		depth++
		i++
		if c == '{' {
			s.stack[w] |= bit
			obj = true
			goto objFirst
		}
		s.stack[w] &^= bit
		obj = false
		goto arrFirst
	case 't':
		if len(p)-i < 4 || string(p[i:i+4]) != "true" {
			return stValue, i, depth
		}
		i += 4
		goto end
	case 'f':
		if len(p)-i < 5 || string(p[i:i+5]) != "false" {
			return stValue, i, depth
		}
		i += 5
		goto end
	case 'n':
		if len(p)-i < 4 || string(p[i:i+4]) != "null" {
			return stValue, i, depth
		}
		i += 4
		goto end
	}
	if j = fastNumber(p, i); j < 0 {
		return stValue, i, depth
	}
	i = j
	goto end

objFirst:
	if i = fastSpace(p, i); i >= len(p) {
		return stObjFirst, i, depth
	}
	if p[i] == '}' {
		i++
		goto pop
	}
	// Apart from '}', stObjFirst and stKey accept the same bytes.
	goto keyTok

key:
	if i = fastSpace(p, i); i >= len(p) {
		return stKey, i, depth
	}
keyTok:
	if p[i] != '"' {
		return stKey, i, depth
	}
	if j = fastString(p, i+1); j < 0 {
		return stKey, i, depth
	}
	i = j

colon:
	if i = fastSpace(p, i); i >= len(p) || p[i] != ':' {
		return stColon, i, depth
	}
	i++
	goto value

pop:
	if depth--; depth > 0 {
		d := depth - 1
		obj = s.stack[d>>6]>>(d&63)&1 != 0
	}

end:
	if i = fastSpace(p, i); i >= len(p) || depth == 0 {
		return stEnd, i, depth
	}
	switch c = p[i]; {
	case c == ',':
		i++
		if obj {
			goto key
		}
		goto value
	case c == '}' && obj, c == ']' && !obj:
		i++
		goto pop
	}
	return stEnd, i, depth
}

// fastSpace returns the index of the first byte of p at or after i that is
// not JSON whitespace, or len(p). Runs of spaces (indentation) are skipped
// 8 bytes at a time.
func fastSpace(p []byte, i int) int {
	for i < len(p) {
		c := p[i]
		if c > ' ' {
			return i
		}
		if c == ' ' && i+8 <= len(p) {
			// The first byte that is not a space ends the run.
			x := binary.LittleEndian.Uint64(p[i:]) ^ spaces8
			if x == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(x) >> 3
			continue
		}
		if class[c]&cSpace == 0 {
			return i
		}
		i++
	}
	return i
}

// fastString returns the index just after the closing quote of the string
// whose contents start at p[i], or -1 when the string does not end validly
// inside p (an invalid escape, a control byte, or the end of p).
func fastString(p []byte, i int) int {
	for {
		for ; i+8 <= len(p); i += 8 {
			x := binary.LittleEndian.Uint64(p[i:])
			quote := x ^ (lo7 * '"')
			bslash := x ^ (lo7 * '\\')
			z := (quote - lo7) &^ quote
			z |= (bslash - lo7) &^ bslash
			z |= (x - lo7*0x20) &^ x
			if z &= hi7; z != 0 {
				i += bits.TrailingZeros64(z) >> 3
				goto special
			}
		}
		for ; i < len(p); i++ {
			if class[p[i]]&cStr == 0 {
				goto special
			}
		}
		return -1
	special:
		switch p[i] {
		case '"':
			return i + 1
		case '\\':
			if i = escape(p, i); i < 0 {
				return -1
			}
		default: // a control byte
			return -1
		}
	}
}

// escape returns the index just after the valid escape sequence that
// starts at p[i] (a backslash), or -1 when it is invalid or runs past p.
func escape(p []byte, i int) int {
	if i+1 >= len(p) {
		return -1
	}
	switch p[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2
	case 'u':
		if len(p)-i < 6 ||
			class[p[i+2]]&class[p[i+3]]&class[p[i+4]]&class[p[i+5]]&cHex == 0 {
			return -1
		}
		return i + 6
	}
	return -1
}

// fastNumber returns the index just after the number starting at p[i], or
// -1 when p[i] does not start a valid number or the number reaches the
// end of p (where it might go on in the next chunk).
func fastNumber(p []byte, i int) int {
	if p[i] == '-' {
		if i++; i >= len(p) {
			return -1
		}
	}
	switch c := p[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		i = skipDigits(p, i+1)
	default:
		return -1
	}
	if i < len(p) && p[i] == '.' {
		if i++; i >= len(p) || class[p[i]]&cDigit == 0 {
			return -1
		}
		i = skipDigits(p, i+1)
	}
	if i < len(p) && p[i]|0x20 == 'e' {
		if i++; i < len(p) && (p[i] == '+' || p[i] == '-') {
			i++
		}
		if i >= len(p) || class[p[i]]&cDigit == 0 {
			return -1
		}
		i = skipDigits(p, i+1)
	}
	if i >= len(p) {
		return -1
	}
	return i
}
