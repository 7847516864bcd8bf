// Package classify describes a byte stream in one line for the model:
// its size in bytes, its number of lines and its kind (text, JSON or
// binary). hybridctx uses it to summarise a stored tool result, for
// example "1048576 bytes, 20311 lines, json".
//
// A [Classifier] is an [io.Writer] that is fed the stream in chunks of any
// size, split anywhere (inside a UTF-8 rune, inside a JSON token), and
// reaches the same verdict as if it had been given the whole stream at
// once. It never buffers the input: its memory is a fixed-size struct,
// whatever the length of the stream, and Write does not allocate.
//
// # Kinds
//
// The kind of a stream is decided in this order:
//
//   - [JSON] when the stream is exactly one valid JSON value with optional
//     surrounding whitespace, accepting precisely what encoding/json.Valid
//     accepts: the same number grammar, escapes, whitespace set (space,
//     tab, CR, LF) and nesting depth limit (10000), and, like json.Valid,
//     any byte of 0x20 or above inside a string, including bytes that are
//     not valid UTF-8. A top-level scalar ("x", 1, true, null) is JSON;
//     input made only of whitespace is not.
//   - [Binary] when the stream is not valid UTF-8, with the semantics of
//     unicode/utf8.Valid applied to the whole stream (a rune split across
//     two writes is joined; a rune cut off by the end of the stream makes
//     it binary).
//   - [Text] otherwise, including the empty stream.
//
// # Long streams
//
// The JSON verdict is exact for streams of at most [JSONScanLimit] bytes
// (64 KiB). A longer stream is judged by a cheaper rule (docs/offload.md, "The notice"), so
// that JSON costs no more than text at any size: it is JSON if and only if
// its first non-whitespace byte is '{' or '[', no syntax error was found
// in its first JSONScanLimit bytes, and its last non-whitespace byte is
// '}' or ']'; the bytes in between are not checked against the JSON
// grammar, so a long stream labelled JSON may still fail to parse. Byte,
// line and UTF-8 accounting stay exact at any size.
//
// # Cost
//
// Lines are counted with bytes.Count. The JSON scan, which runs first,
// has three gears, each handing over to the next slower one what it is
// not sure of:
//
//   - on amd64 with AVX2, a block pass (blocks.go): vector compares give,
//     per 64 bytes, bit masks of quotes, backslashes, control bytes,
//     whitespace, punctuation and non-ASCII bytes; bit arithmetic finds
//     the escaped bytes, the bytes inside strings and the start of every
//     token, so the grammar runs once per token and never visits the
//     bytes of strings or whitespace one by one. It also checks the UTF-8
//     of the bytes it covers, one run of non-ASCII bytes at a time;
//   - a whole-token pass (fast.go): the grammar's states as code
//     positions, strings and indentation 8 bytes at a time;
//   - the byte-wise state machine (scan.go), which can stop and resume at
//     any byte: it takes the tokens cut by the end of a write and finds
//     syntax errors.
//
// The UTF-8 of what the block pass did not cover is checked by validUTF8
// (utf8.go: 32 bytes at a time with AVX2, utf8.Valid elsewhere), carrying
// at most 3 bytes of a split rune to the next write.
// Each check stops as soon as its answer is known: UTF-8 validation after
// the first invalid sequence, and the JSON scan after the first syntax
// error (often the first non-whitespace byte of a text or binary stream).
package classify

import (
	"bytes"
	"unicode/utf8"
)

// Kind is the kind of content of a byte stream.
type Kind uint8

const (
	// Text is valid UTF-8 that is not a JSON document; the empty stream is Text.
	Text Kind = iota
	// JSON is a single valid JSON value, optionally surrounded by whitespace.
	JSON
	// Binary is a stream that is not valid UTF-8 (and not JSON).
	Binary
)

// String returns "text", "json" or "binary"; an unknown Kind prints as
// "kind(N)".
func (k Kind) String() string {
	switch k {
	case Text:
		return "text"
	case JSON:
		return "json"
	case Binary:
		return "binary"
	}
	return "kind(" + itoa(int(k)) + ")"
}

func itoa(n int) string {
	var b [4]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// JSONScanLimit is the number of leading bytes of a stream that are
// checked against the full JSON grammar. Streams longer than this are
// judged JSON or not by the cheaper rule described in the package
// documentation.
const JSONScanLimit = 64 << 10

// scanLimit is JSONScanLimit; tests lower it to exercise the long-stream
// rule on short inputs.
var scanLimit int64 = JSONScanLimit

// Classifier accumulates the byte count, line count and kind of a stream
// written to it in chunks. The zero value is ready to use. A Classifier
// must not be used by several goroutines at once.
type Classifier struct {
	n      int64 // bytes written
	lf     int64 // LF bytes written
	last   byte  // last byte written
	lastNS byte  // last non-whitespace byte written, 0 if none yet

	badUTF8 bool    // an invalid UTF-8 sequence was seen
	nc      uint8   // number of bytes held in carry
	carry   [4]byte // valid but incomplete rune prefix from the previous write

	jsonOff bool // JSON scanning finished: syntax error, or past the limit with top known
	js      scanner
}

// Write feeds p to the classifier. It never fails and always returns
// len(p), nil.
func (c *Classifier) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.lf += int64(bytes.Count(p, newline))
	c.last = p[len(p)-1]
	for i := len(p) - 1; i >= 0; i-- {
		if !isSpace(p[i]) {
			c.lastNS = p[i]
			break
		}
	}
	var u utf8Run
	if !c.jsonOff {
		u = c.scanJSON(p)
	}
	if !c.badUTF8 {
		// The JSON scan may have checked the UTF-8 of a range of p, which
		// starts next to an ASCII byte: only what surrounds it is left. A
		// rune still open where it starts is cut by an ASCII byte.
		rest := p
		if u.from < u.to && (u.from > 0 && p[u.from-1] < 0x80 || u.from == 0 && c.nc == 0) {
			c.checkUTF8(p[:u.from])
			c.badUTF8 = c.badUTF8 || c.nc > 0 || u.bad
			rest = p[u.to:]
		}
		if !c.badUTF8 {
			c.checkUTF8(rest)
		}
	}
	c.n += int64(len(p))
	return len(p), nil
}

var newline = []byte{'\n'}

// scanJSON runs the JSON scanner over the part of p that lies within the
// first scanLimit bytes of the stream, and past it only looks for the
// first non-whitespace byte if none has been seen yet. It returns the
// range of p whose UTF-8 the scanner checked on the way, if any.
func (c *Classifier) scanJSON(p []byte) (u utf8Run) {
	if room := scanLimit - c.n; room > 0 {
		q := p
		if int64(len(q)) > room {
			q = q[:room]
		}
		c.js.scan(q)
		u = c.js.utf8
		if c.js.st == stErr {
			c.jsonOff = true
			return u
		}
		p = p[len(q):]
	}
	if len(p) == 0 {
		return u
	}
	// Past the limit: only the first non-whitespace byte still matters.
	// Once it is seen the scan is over, even when it is a NUL byte (which
	// top cannot tell from "none yet").
	if c.js.top == 0 {
		for _, b := range p {
			if !isSpace(b) {
				c.js.top = b
				c.jsonOff = true
				return u
			}
		}
		return u
	}
	c.jsonOff = true
	return u
}

// checkUTF8 validates p as the continuation of the stream so far.
func (c *Classifier) checkUTF8(p []byte) {
	if c.nc > 0 {
		// Complete the rune left over from the previous write, one byte at
		// a time, until utf8.FullRune can decide it.
		for len(p) > 0 {
			c.carry[c.nc] = p[0]
			c.nc++
			p = p[1:]
			if utf8.FullRune(c.carry[:c.nc]) {
				r, size := utf8.DecodeRune(c.carry[:c.nc])
				c.nc = 0
				if r == utf8.RuneError && size == 1 {
					c.badUTF8 = true
					return
				}
				break
			}
		}
		if c.nc > 0 || len(p) == 0 {
			return
		}
	}
	// Hold back a trailing valid-but-incomplete rune prefix (at most 3
	// bytes); everything before it is validated in bulk.
	cut := len(p)
	for j := len(p) - 1; j >= 0 && j >= len(p)-3; j-- {
		if b := p[j]; b&0xC0 != 0x80 {
			if b >= 0xC0 && !utf8.FullRune(p[j:]) {
				cut = j
			}
			break
		}
	}
	if !validUTF8(p[:cut]) {
		c.badUTF8 = true
		return
	}
	c.nc = uint8(copy(c.carry[:], p[cut:]))
}

// Bytes returns the number of bytes written since the zero value or the
// last Reset.
func (c *Classifier) Bytes() int64 { return c.n }

// Lines returns the number of LF (0x0A) bytes written, plus one when the
// stream is non-empty and does not end in LF. The empty stream has 0
// lines.
func (c *Classifier) Lines() int64 {
	if c.n > 0 && c.last != '\n' {
		return c.lf + 1
	}
	return c.lf
}

// Kind returns the kind of the bytes written so far, as if the stream
// ended here. It does not change the classifier: more writes may follow.
func (c *Classifier) Kind() Kind {
	if c.n == 0 {
		return Text
	}
	if c.isJSON() {
		return JSON
	}
	if c.badUTF8 || c.nc > 0 {
		return Binary
	}
	return Text
}

func (c *Classifier) isJSON() bool {
	if c.js.st == stErr {
		return false
	}
	if c.n > scanLimit {
		return (c.js.top == '{' || c.js.top == '[') && (c.lastNS == '}' || c.lastNS == ']')
	}
	return c.js.complete()
}

// Reset returns the classifier to its zero state, ready for a new stream.
func (c *Classifier) Reset() { *c = Classifier{} }

// Of classifies a whole slice. It returns the same kind and line count as
// writing b to a zero Classifier.
func Of(b []byte) (kind Kind, lines int64) {
	var c Classifier
	c.Write(b)
	return c.Kind(), c.Lines()
}

// MayBeJSON reports whether b's first non-whitespace byte opens an object
// or an array: the only JSON whose exact scan costs about as much as its
// hash, and so worth running beside it.
func MayBeJSON(b []byte) bool {
	i := skipSpace(b, 0)
	return i < len(b) && (b[i] == '{' || b[i] == '[')
}
