package classify

import (
	"math/bits"
	"unicode/utf8"
)

// The block path: 64 bytes at a time, with vector masks.
//
// Even whole tokens at a time (fast), the scanner spends most of its time
// finding where each string and run of whitespace ends, in loops whose
// number of turns depends on the data and so cannot be predicted. The
// block path instead computes, for each 64-byte block, one bit per byte
// for a few byte classes (quote, backslash, control byte, whitespace,
// '{}[]:,', non-ASCII, digit), and bit arithmetic then gives, for the
// whole block at once, which bytes are escaped, which lie inside strings,
// and where the tokens start (the events): opening quotes, punctuation
// outside strings, and the first byte of each number or literal. Both are
// done by blockEvents, a batch of blocks at a time, with AVX-512 or AVX2
// and a carry-less multiplication (blocks_amd64.s); blockEventsGo is the
// portable definition the tests hold them to, and a machine without them
// goes without the block path.
//
// The grammar then runs once per event (blocks, in blocks_walk.go), with
// its states as code positions; the bytes of strings and whitespace are
// never visited one by one, and most numbers and literals are checked
// from the masks. Escapes and UTF-8 are checked per batch
// (blockCursor.batch): each escaped byte against a class, each run of
// non-ASCII bytes that is not a two-byte sequence with utf8.Valid.
//
// Like fast, it commits only what it is sure of and hands the rest to the
// byte-wise machine: it stops before the token holding the first anomaly
// (a control byte or a bad escape in a string, a bad number or literal, a
// grammar error, the depth limit), and before the last token it reached,
// which may run past the blocks it read.

// The masks of a block, maskCount words, in this order (blockMasksGo).
const (
	mQuote  = iota // '"'
	mBslash        // '\\'
	mCtrl          // < 0x20
	mSpace         // JSON whitespace
	mOp            // '{', '}', '[', ']', ':', ','
	mHigh          // >= 0x80 (not ASCII)
	mDigit         // '0'-'9'
	maskCount
)

// The words blockEvents writes for each block, in this order.
const (
	eEvents  = iota // token starts (events)
	eEscaped        // bytes that follow an escaping backslash
	eCtrl           // control bytes inside strings (anomalies)
	eScalar         // bytes of numbers and literals (or errors)
	eDigit          // '0'-'9'
	eHigh           // >= 0x80 (not ASCII), less two-byte sequences (pairs)
	eventWords
)

// batchBlocks is the number of blocks whose events are computed at once.
const batchBlocks = 16

// eventBatch holds the words of a batch of blocks.
type eventBatch [batchBlocks][eventWords]uint64

// minBlocks is the shortest input, in bytes, worth the block path.
const minBlocks = 4 * 64

// blockMasksGo writes, for each of the blocks 64-byte blocks of p,
// maskCount words to out: the byte classes blockEventsGo starts from.
func blockMasksGo(p []byte, blocks int, out []uint64) {
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
			if c >= 0x80 {
				m[mHigh] |= bit
			}
			if class[c]&cSpace != 0 {
				m[mSpace] |= bit
			}
			if class[c]&cDigit != 0 {
				m[mDigit] |= bit
			}
		}
	}
}

// blockEventsGo is the portable blockEvents: for each of the blocks
// 64-byte blocks of p (at most batchBlocks), it writes its words to out,
// carrying bs from block to block.
func blockEventsGo(p []byte, blocks int, out *eventBatch, bs *blockState) {
	var m [maskCount]uint64
	for k := range blocks {
		blockMasksGo(p[k<<6:], 1, m[:])
		o := &out[k]
		o[eEvents], o[eEscaped], o[eCtrl], o[eScalar] = bs.events(m[:])
		o[eDigit], o[eHigh] = m[mDigit], m[mHigh]&^pairs(p[k<<6:(k+1)<<6])
	}
}

// pairs returns the bytes of a block that form two-byte UTF-8 sequences
// inside it: a lead byte 0xC2-0xDF and the continuation byte 0x80-0xBF
// after it. Whatever surrounds such a pair, it is one whole valid rune,
// so the UTF-8 check need not visit it: the other non-ASCII bytes,
// checked run by run, decide.
func pairs(b []byte) uint64 {
	var lead, cont uint64
	for j, c := range b[:64] {
		if 0xC2 <= c && c <= 0xDF {
			lead |= 1 << j
		}
		if c&0xC0 == 0x80 {
			cont |= 1 << j
		}
	}
	lead &= cont >> 1
	return lead | lead<<1
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

// events returns the token starts of the block with masks m, the
// anomalies (control bytes inside strings) and escaped bytes (which the
// caller checks), and the bytes of numbers and literals (scalar).
func (b *blockState) events(m []uint64) (events, escapes, ctrl, scalar uint64) {
	m = m[:maskCount]
	esc := escaped(m[mBslash], &b.esc)
	quote := m[mQuote] &^ esc
	in := prefixXor(quote) ^ b.inStr
	b.inStr = uint64(int64(in) >> 63)
	// Bytes outside strings that are not whitespace, punctuation or quotes
	// belong to numbers and literals (or are errors).
	scalar = ^(m[mSpace] | m[mOp] | m[mQuote] | in)
	starts := scalar &^ (scalar<<1 | b.scalar)
	b.scalar = scalar >> 63
	return quote&in | m[mOp]&^in | starts, esc, m[mCtrl] & in, scalar
}

// blockCursor holds the words of a batch of blocks, and what the batch
// passes to the next.
type blockCursor struct {
	words eventBatch
	n     int  // blocks in the batch
	stop  bool // the batch ends at an anomaly: the walk stops after it
	bs    blockState
	u     utf8Run // UTF-8 checked so far, run by run of non-ASCII bytes
}

// batch computes the words of the whole blocks of p from base, up to
// batchBlocks of them, and reports whether there were any. Besides
// blockEvents, it checks the escapes and the UTF-8 of each block. It
// ends the batch at the first block with an anomaly (a control byte in a
// string, a bad escape), whose eEvents it leaves with only the events
// before the anomaly: the anomaly lies in the string opened by the last
// of them (a backslash outside a string stops the walk earlier, at the
// number or literal it is part of).
func (c *blockCursor) batch(p []byte, base int) bool {
	if c.stop || len(p)-base < 64 {
		return false
	}
	c.n = min((len(p)-base)>>6, batchBlocks)
	blockEvents(p[base:], c.n, &c.words, &c.bs)
	// UTF-8: p[u.from:u.to] is known valid (or u.bad: not), checked run by
	// run of non-ASCII bytes, each bounded by ASCII bytes; checking stops
	// at a bad run, or one cut by the end of p.
	u := c.u
	for k := range c.n {
		w := &c.words[k]
		b := base + k<<6
		if u.to >= b && !u.bad {
			if high := w[eHigh]; high == 0 {
				u.to = max(u.to, b+64)
			} else {
				u.check(p, b, high)
			}
		}
		if w[eEscaped]|w[eCtrl] != 0 && anomaly(p, b, w) {
			c.n, c.stop = k+1, true
			break
		}
	}
	c.u = u
	return true
}

// anomaly checks the escapes of the block of p at b, whose words are w,
// and reports whether it has an anomaly: a control byte in a string, or a
// bad escape. It then leaves in w[eEvents] only the events before the
// first anomaly.
func anomaly(p []byte, b int, w *[eventWords]uint64) bool {
	bad := w[eCtrl]
	for esc := w[eEscaped]; esc != 0; esc &= esc - 1 {
		// A byte that may follow a backslash, and four hex digits after a
		// 'u'.
		if j := b + bits.TrailingZeros64(esc); class[p[j]]&cEsc == 0 || p[j] == 'u' && escape(p, j-1) < 0 {
			bad |= esc & -esc
			break
		}
	}
	if bad == 0 {
		return false
	}
	w[eEvents] &= bad&-bad - 1
	return true
}

// utf8Run is a range of p checked for UTF-8 by the block path: valid
// unless bad, and made of whole runes: it starts and ends next to ASCII
// bytes (or at the start of p), so it is valid or not whatever surrounds
// it.
type utf8Run struct {
	from, to int
	bad      bool
}

// check extends u over the block of p at base, whose bytes >= 0x80 are
// high, when u reaches the block. Each run of non-ASCII bytes is checked
// whole; a run that reaches the end of p is left out (it may go on in
// the next chunk), and so is everything after it.
func (u *utf8Run) check(p []byte, base int, high uint64) {
	if u.bad {
		return
	}
	if u.to > base {
		// The start of the block belongs to a run already checked.
		high &= ^uint64(0) << (u.to - base)
	}
	for high != 0 {
		k := bits.TrailingZeros64(high)
		n := bits.TrailingZeros64(^(high >> k)) // the run's length in the block
		s, e := base+k, base+k+n
		if k+n == 64 {
			// The run reaches the end of the block: it may go on.
			for e < len(p) && p[e] >= 0x80 {
				e++
			}
			if e == len(p) {
				u.to = s
				return
			}
		}
		r := p[s:e]
		if !(len(r) == 2 && r[0]-0xC2 < 0xDF-0xC2+1 && r[1]&0xC0 == 0x80) && !utf8.Valid(r) {
			u.bad, u.to = true, e
			return
		}
		u.to = e
		if e-base >= 64 {
			return
		}
		high &= ^uint64(0) << (e - base)
	}
	u.to = max(u.to, base+64)
}
