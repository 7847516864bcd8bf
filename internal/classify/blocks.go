package classify

import "math/bits"

// The block path: 64 bytes at a time, with vector masks.
//
// Even whole tokens at a time (fast), the scanner spends most of its time
// finding where each string and run of whitespace ends, in loops whose
// number of turns depends on the data and so cannot be predicted. The
// block path instead computes, for each 64-byte block, one bit per byte
// for a few byte classes (quote, backslash, control byte, whitespace,
// '{}[]:,'), with vector instructions where the machine has them. Bit
// arithmetic then gives, for the whole block at once, which bytes are
// escaped, which lie inside strings, and where the tokens start (the
// events): opening quotes, punctuation outside strings, and the first
// byte of each number or literal. The grammar runs once per event; the
// bytes of strings and whitespace are never visited one by one.
//
// Like fast, it commits only what it is sure of and hands the rest to the
// byte-wise machine: it stops before the token holding the first anomaly
// (a control byte or a bad escape in a string, a bad number or literal, a
// grammar error, the depth limit), and before the last token it reached,
// which may run past the blocks it read.

// The masks of a block, maskCount words, in this order.
const (
	mQuote  = iota // '"'
	mBslash        // '\\'
	mCtrl          // < 0x20
	mSpace         // JSON whitespace
	mOp            // '{', '}', '[', ']', ':', ','
	maskCount
)

// batchBlocks is the number of blocks whose masks are computed at once.
const batchBlocks = 16

// minBlocks is the shortest input, in bytes, worth the block path.
const minBlocks = 4 * 64

// blockMasksGo is the portable blockMasks: for each of the blocks 64-byte
// blocks of p, it writes maskCount words to out. It reports whether any of
// the bytes is 0x80 or above (not ASCII).
func blockMasksGo(p []byte, blocks int, out []uint64) (high bool) {
	for _, c := range p[:blocks<<6] {
		high = high || c >= 0x80
	}
	for k := range blocks {
		m := out[k*maskCount : (k+1)*maskCount]
		clear(m)
		for j, c := range p[k<<6 : (k+1)<<6] {
			bit := uint64(1) << j
			switch {
			case c == '"':
				m[mQuote] |= bit
			case c == '\\':
				m[mBslash] |= bit
			case c == '{', c == '}', c == '[', c == ']', c == ':', c == ',':
				m[mOp] |= bit
			}
			if c < 0x20 {
				m[mCtrl] |= bit
			}
			if class[c]&cSpace != 0 {
				m[mSpace] |= bit
			}
		}
	}
	return high
}

// escaped returns the bytes of a block that follow an escaping backslash,
// given its backslashes b. carry is 1 when the block's first byte is
// escaped by the end of the previous block, and is updated for the next.
// A backslash escapes the next byte when it ends a run of backslashes of
// odd length.
func escaped(b uint64, carry *uint64) uint64 {
	const even = 0x5555555555555555
	b &^= *carry
	follows := b<<1 | *carry
	// Runs that start on an odd bit: adding the run to its start carries
	// past its end, leaving a bit just after it.
	oddStarts := b &^ even &^ follows
	ends, c := bits.Add64(oddStarts, b, 0)
	*carry = c
	return (even ^ ends<<1) & follows
}

// prefixXor sets bit k of the result to the parity of bits 0..k of x.
func prefixXor(x uint64) uint64 {
	x ^= x << 1
	x ^= x << 2
	x ^= x << 4
	x ^= x << 8
	x ^= x << 16
	x ^= x << 32
	return x
}

// blockState carries what one block's masks pass to the next.
type blockState struct {
	esc    uint64 // 1: the next block's first byte is escaped
	inStr  uint64 // all ones: the next block starts inside a string
	scalar uint64 // 1: the previous block ended with a number or literal byte
}

// events returns the token starts of the block with masks m, and the
// anomalies: control bytes inside strings and escaped bytes (which the
// caller checks).
func (b *blockState) events(m []uint64) (events, escapes, ctrl uint64) {
	m = m[:maskCount]
	esc := escaped(m[mBslash], &b.esc)
	quote := m[mQuote] &^ esc
	in := prefixXor(quote) ^ b.inStr
	b.inStr = uint64(int64(in) >> 63)
	// Bytes outside strings that are not whitespace, punctuation or quotes
	// belong to numbers and literals (or are errors).
	scalar := ^(m[mSpace] | m[mOp] | m[mQuote] | in)
	starts := scalar &^ (scalar<<1 | b.scalar)
	b.scalar = scalar >> 63
	return quote&in | m[mOp]&^in | starts, esc, m[mCtrl] & in
}

// blocks scans whole 64-byte blocks of p from i, starting in one of the
// states between tokens, and returns the state, position and depth before
// the last token it took or the token holding an anomaly. It never returns
// stErr. It records in s.ascii the range of p from i that it found to be
// all ASCII (valid UTF-8 whatever surrounds it), if longer than the one
// held.
func (s *scanner) blocks(p []byte, i int, st state, depth int32) (state, int, int32) {
	var (
		masks [batchBlocks * maskCount]uint64
		bs    blockState
		obj   bool
	)
	if depth > 0 {
		d := depth - 1
		obj = s.stack[d>>6]>>(d&63)&1 != 0
	}
	// The state before the last event taken, where the scan resumes.
	lastSt, lastPos, lastDepth := st, i, depth
	asciiEnd := i
	defer func() {
		if asciiEnd-i > s.ascii[1]-s.ascii[0] {
			s.ascii = [2]int{i, asciiEnd}
		}
	}()
	for base := i; len(p)-base >= 64; {
		n := min((len(p)-base)>>6, batchBlocks)
		if !blockMasks(p[base:], n, masks[:]) && asciiEnd == base {
			asciiEnd = base + n<<6
		}
		for k := range n {
			ev, esc, bad := bs.events(masks[k*maskCount:])
			for ; esc != 0; esc &= esc - 1 {
				j := base + bits.TrailingZeros64(esc)
				if escape(p, j-1) < 0 {
					bad |= esc & -esc
					break
				}
			}
			if bad != 0 {
				// Only the events before the first anomaly count; the
				// anomaly lies in the string opened by the last of them.
				ev &= bad&-bad - 1
			}
			for ; ev != 0; ev &= ev - 1 {
				pos := base + bits.TrailingZeros64(ev)
				c := p[pos]
				lastSt, lastPos, lastDepth = st, pos, depth
				switch st {
				case stValue, stArrFirst:
					if depth == 0 {
						s.top = c
					}
					switch c {
					case '"':
						st = stEnd
						continue
					case '{', '[':
						if depth == maxDepth {
							return st, pos, depth
						}
						w, bit := depth>>6, uint64(1)<<(depth&63)
						depth++
						if c == '{' {
							s.stack[w] |= bit
							obj, st = true, stObjFirst
						} else {
							s.stack[w] &^= bit
							obj, st = false, stArrFirst
						}
						continue
					case ']':
						if st == stArrFirst {
							goto pop
						}
						return st, pos, depth
					}
					if !scalarAt(p, pos) {
						return st, pos, depth
					}
					st = stEnd
				case stObjFirst, stKey:
					switch {
					case c == '"':
						st = stColon
					case c == '}' && st == stObjFirst:
						goto pop
					default:
						return st, pos, depth
					}
				case stColon:
					if c != ':' {
						return st, pos, depth
					}
					st = stValue
				case stEnd:
					switch {
					case depth == 0:
						return st, pos, depth
					case c == ',' && obj:
						st = stKey
					case c == ',':
						st = stValue
					case c == '}' && obj, c == ']' && !obj:
						goto pop
					default:
						return st, pos, depth
					}
				}
				continue
			pop:
				if depth--; depth > 0 {
					d := depth - 1
					obj = s.stack[d>>6]>>(d&63)&1 != 0
				}
				st = stEnd
			}
			if bad != 0 {
				return lastSt, lastPos, lastDepth
			}
			base += 64
		}
	}
	return lastSt, lastPos, lastDepth
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
