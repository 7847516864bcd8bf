package classify

import (
	"encoding/binary"
	"math/bits"
)

// The block walk: the grammar over the events of blocks.go, and the
// checks of numbers and literals it does from the masks.

// blocks scans whole 64-byte blocks of p from i, starting in one of the
// states between tokens, and returns the state, position and depth before
// the last token it took or the token holding an anomaly. It never returns
// stErr. It records in s.utf8 the range of p from i whose UTF-8 it
// checked on the way.
//
// As in fast, the grammar's states are code positions (labels), here with
// the kind of the innermost container folded in where it decides what
// comes next: a value in an object is followed by ',' and a key or by
// '}', one in an array by ',' and a value or by ']'. Each state takes the
// next event of the block, and when the block has none left, moves to the
// next block of the batch itself (a shared step would need a dispatch on
// the state after it, mispredicted at most block ends); only at the end
// of a batch does it leave its state in st and go to refill, which
// computes the next batch and comes back to it.
func (s *scanner) blocks(p []byte, i int, st state, depth int32) (state, int, int32) {
	var (
		cur  = blockCursor{u: utf8Run{from: i, to: i}}
		base = i - 64 // the block is p[base : base+64]
		k    int      // the next block of the batch
		ev   uint64   // the block's events not yet taken
		pos  = -1     // the last event taken
		obj  bool     // the innermost open container is an object
	)
	if depth == 0 && st != stValue {
		return st, i, depth
	}
	if depth > 0 {
		d := depth - 1
		obj = s.stack[d>>6]>>(d&63)&1 != 0
	}
	defer func() {
		if u := cur.u; u.to-u.from > s.utf8.to-s.utf8.from || u.bad {
			s.utf8 = u
		}
	}()
	goto refill

valueTop: // depth 0: the document's first token
	for ev == 0 {
		if k == cur.n {
			st = stValue
			goto refill
		}
		ev = cur.words[k&(batchBlocks-1)][eEvents]
		k++
		base += 64
	}
	pos = base + bits.TrailingZeros64(ev)
	ev &= ev - 1
	switch s.top = p[pos]; s.top {
	case '{':
		goto pushObj
	case '[':
		goto pushArr
	}
	return stValue, pos, depth

valueObj: // after ':'
	for ev == 0 {
		if k == cur.n {
			st = stValue
			goto refill
		}
		ev = cur.words[k&(batchBlocks-1)][eEvents]
		k++
		base += 64
	}
	pos = base + bits.TrailingZeros64(ev)
	ev &= ev - 1
	switch p[pos] {
	case '"':
		goto endObj
	case '{':
		goto pushObj
	case '[':
		goto pushArr
	}
	goto scalar

arrFirst: // after '['
	for ev == 0 {
		if k == cur.n {
			st = stArrFirst
			goto refill
		}
		ev = cur.words[k&(batchBlocks-1)][eEvents]
		k++
		base += 64
	}
	pos = base + bits.TrailingZeros64(ev)
	ev &= ev - 1
	switch p[pos] {
	case '"':
		goto endArr
	case '{':
		goto pushObj
	case '[':
		goto pushArr
	case ']':
		goto pop
	}
	goto scalar

valueArr: // after ',' in an array
	for ev == 0 {
		if k == cur.n {
			st = stValue
			goto refill
		}
		ev = cur.words[k&(batchBlocks-1)][eEvents]
		k++
		base += 64
	}
	pos = base + bits.TrailingZeros64(ev)
	ev &= ev - 1
	switch p[pos] {
	case '"':
		goto endArr
	case '{':
		goto pushObj
	case '[':
		goto pushArr
	}
	goto scalar

objFirst: // after '{'
	for ev == 0 {
		if k == cur.n {
			st = stObjFirst
			goto refill
		}
		ev = cur.words[k&(batchBlocks-1)][eEvents]
		k++
		base += 64
	}
	pos = base + bits.TrailingZeros64(ev)
	ev &= ev - 1
	switch p[pos] {
	case '"':
		goto colon
	case '}':
		goto pop
	}
	return stObjFirst, pos, depth

key: // after ',' in an object
	for ev == 0 {
		if k == cur.n {
			st = stKey
			goto refill
		}
		ev = cur.words[k&(batchBlocks-1)][eEvents]
		k++
		base += 64
	}
	pos = base + bits.TrailingZeros64(ev)
	ev &= ev - 1
	if p[pos] == '"' {
		goto colon
	}
	return stKey, pos, depth

colon: // after a key
	for ev == 0 {
		if k == cur.n {
			st = stColon
			goto refill
		}
		ev = cur.words[k&(batchBlocks-1)][eEvents]
		k++
		base += 64
	}
	pos = base + bits.TrailingZeros64(ev)
	ev &= ev - 1
	if p[pos] == ':' {
		goto valueObj
	}
	return stColon, pos, depth

endObj: // after a value in an object
	for ev == 0 {
		if k == cur.n {
			st = stEnd
			goto refill
		}
		ev = cur.words[k&(batchBlocks-1)][eEvents]
		k++
		base += 64
	}
	pos = base + bits.TrailingZeros64(ev)
	ev &= ev - 1
	switch p[pos] {
	case ',':
		goto key
	case '}':
		goto pop
	}
	return stEnd, pos, depth

endArr: // after a value in an array
	for ev == 0 {
		if k == cur.n {
			st = stEnd
			goto refill
		}
		ev = cur.words[k&(batchBlocks-1)][eEvents]
		k++
		base += 64
	}
	pos = base + bits.TrailingZeros64(ev)
	ev &= ev - 1
	switch p[pos] {
	case ',':
		goto valueArr
	case ']':
		goto pop
	}
	return stEnd, pos, depth

pushObj:
	if depth == maxDepth {
		return stValue, pos, depth
	}
	s.stack[depth>>6] |= 1 << (depth & 63)
	depth++
	obj = true
	goto objFirst

pushArr:
	if depth == maxDepth {
		return stValue, pos, depth
	}
	s.stack[depth>>6] &^= 1 << (depth & 63)
	depth++
	obj = false
	goto arrFirst

pop:
	if depth--; depth == 0 {
		// The document is closed: what follows is the byte-wise
		// machine's (whitespace, or an error).
		return stEnd, pos + 1, depth
	}
	if obj = s.stack[(depth-1)>>6]>>((depth-1)&63)&1 != 0; obj {
		goto endObj
	}
	goto endArr

scalar: // a number or literal (or an error) at pos, in a value state
	// The common shapes are told from the masks here, without a call
	// (which would spill the walk's registers); the rest goes to
	// scalarRun.
	{
		w := &cur.words[(k-1)&(batchBlocks-1)]
		j := uint(pos-base) & 63
		r := w[eScalar] >> j
		m := (r+1)&^r - 1 // the run of number and literal bytes at pos
		switch {
		case m == 0 || (m+1)<<j == 0:
			// No run, or one that may go on in the next block.
		case w[eDigit]>>j&m == m: // an integer
			if p[pos] != '0' || m == 1 {
				goto valueEnd
			}
			return stValue, pos, depth
		case m == 0xF:
			if w := binary.LittleEndian.Uint32(p[pos:]); w == litTrue || w == litNull {
				goto valueEnd
			}
		case m == 0x1F:
			if binary.LittleEndian.Uint32(p[pos:]) == litFals && p[pos+4] == 'e' {
				goto valueEnd
			}
		}
		if !scalarRun(p, pos, r, w[eDigit]>>j, int(j)) {
			return stValue, pos, depth
		}
	}
valueEnd:
	if obj {
		goto endObj
	}
	goto endArr

refill: // the batch has no events left: on to the next one
	if !cur.batch(p, base+64) {
		goto stop
	}
	k = 0
	switch st {
	case stValue:
		switch {
		case depth == 0:
			goto valueTop
		case obj:
			goto valueObj
		}
		goto valueArr
	case stArrFirst:
		goto arrFirst
	case stObjFirst:
		goto objFirst
	case stKey:
		goto key
	case stColon:
		goto colon
	}
	if obj {
		goto endObj
	}
	goto endArr

stop: // at an anomaly or the end of the blocks: back before the last event
	if pos < 0 {
		return st, i, depth
	}
	switch p[pos] {
	case '{', '[':
		return stValue, pos, depth - 1
	case '}', ']':
		return stEnd, pos, depth + 1
	case ',':
		return stEnd, pos, depth
	case ':':
		return stColon, pos, depth
	case '"':
		if st == stColon {
			return stKey, pos, depth
		}
	}
	return stValue, pos, depth
}

// The literals' first four bytes, as little-endian words.
const (
	litTrue = 't' | 'r'<<8 | 'u'<<16 | 'e'<<24
	litNull = 'n' | 'u'<<8 | 'l'<<16 | 'l'<<24
	litFals = 'f' | 'a'<<8 | 'l'<<16 | 's'<<24
)

// scalarRun reports whether a valid number or literal starts at p[pos],
// followed by a byte that ends it. sc and dig are the block's masks of
// number or literal bytes and of digits, shifted so that bit 0 is pos,
// which is at offset j of its block. The common shapes (an integer, a
// decimal fraction, true, false, null) lying inside the block are told
// from the masks; the rest goes to scalarAt.
func scalarRun(p []byte, pos int, sc, dig uint64, j int) bool {
	n := bits.TrailingZeros64(^sc) // the length of the run at pos
	if n == 0 || j+n >= 64 {
		// Not a number or literal byte, or the run may go on in the next
		// block.
		return scalarAt(p, pos)
	}
	// The byte after the run is whitespace, punctuation or a quote.
	nd := (uint64(1)<<n - 1) &^ dig // the bytes of the run that are not digits
	sign := 0
	if p[pos] == '-' {
		sign = 1
	}
	nd &^= uint64(sign)
	lead := p[pos+sign] // the first digit, when the run is a number
	switch {
	case nd == 0: // an integer
		return n > sign && (lead != '0' || n == sign+1)
	case nd&(nd-1) == 0 && p[pos+bits.TrailingZeros64(nd)] == '.':
		// Digits, '.', digits.
		d := bits.TrailingZeros64(nd)
		return d > sign && d < n-1 && (lead != '0' || d == sign+1)
	case n == 4:
		if w := binary.LittleEndian.Uint32(p[pos:]); w == litTrue || w == litNull {
			return true
		}
	case n == 5:
		if binary.LittleEndian.Uint32(p[pos:]) == litFals && p[pos+4] == 'e' {
			return true
		}
	}
	// Exponents, and errors.
	return scalarAt(p, pos)
}

// scalarAt reports whether a number or literal starts at p[i] and is
// followed, inside p, by a byte that cannot continue it (whitespace,
// punctuation or a quote).
func scalarAt(p []byte, i int) bool {
	var j int
	switch p[i] {
	case 't':
		j = i + 4
		if j > len(p) || string(p[i:j]) != "true" {
			return false
		}
	case 'f':
		j = i + 5
		if j > len(p) || string(p[i:j]) != "false" {
			return false
		}
	case 'n':
		j = i + 4
		if j > len(p) || string(p[i:j]) != "null" {
			return false
		}
	default:
		if j = fastNumber(p, i); j < 0 {
			return false
		}
	}
	return j < len(p) && class[p[j]]&cDelim != 0
}
