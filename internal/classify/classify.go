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
// The kind of a stream is decided in this order (docs/offload.md, "The
// notice"):
//
//   - [Binary] when the stream is not valid UTF-8, with the semantics of
//     unicode/utf8.Valid applied to the whole stream, at any length (a
//     rune split across two writes is joined; a rune cut off by the end of
//     the stream makes it binary). This includes JSON whose strings hold
//     bytes that are not valid UTF-8, which encoding/json.Valid accepts.
//   - [JSON] when the stream is exactly one valid JSON value with optional
//     surrounding whitespace, accepting precisely what encoding/json.Valid
//     accepts of valid UTF-8: the same number grammar, escapes, whitespace
//     set (space, tab, CR, LF) and nesting depth limit (10000). A
//     top-level scalar ("x", 1, true, null) is JSON; input made only of
//     whitespace is not.
//   - [Text] otherwise, including the empty stream.
//
// # Long streams
//
// The JSON verdict is exact for streams of at most [JSONScanLimit] bytes
// (64 KiB). A longer stream is judged by a cheaper rule (see
// docs/offload.md, "The notice"), so that JSON costs no more than text at
// any size: it is JSON if and only if
// its first non-whitespace byte is '{' or '[', no syntax error was found
// in its first JSONScanLimit bytes, and its last non-whitespace byte is
// '}' or ']'; the bytes in between are not checked against the JSON
// grammar, so a long stream labelled JSON may still fail to parse. Byte,
// line and UTF-8 accounting stay exact at any size.
//
// # Cost
//
// Lines are counted with bytes.Count and UTF-8 is checked with
// validUTF8 (utf8.go: utf8.Valid, or 32 bytes at a time with AVX2),
// carrying at most 3 bytes of a split rune to the next write.
// The JSON scan is the module's one JSON tokenizer (internal/jsonstream's
// Tokenizer), watching no event: a byte-wise state machine that can stop
// and resume at any byte; it reads strings and indentation 8 bytes at a
// time and, since it only ever reads the first [JSONScanLimit] bytes,
// costs at most a few tens of microseconds per stream.
//
// Each check stops as soon as its answer is known: UTF-8 validation after
// the first invalid sequence (and the JSON scan with it), and the JSON scan
// after the first syntax error (often the first non-whitespace byte of a
// text or binary stream).
package classify

import (
	"bytes"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
)

// Kind is the kind of content of a byte stream.
type Kind uint8

const (
	// Text is valid UTF-8 that is not a JSON document; the empty stream is Text.
	Text Kind = iota
	// JSON is valid UTF-8 holding a single valid JSON value, optionally
	// surrounded by whitespace.
	JSON
	// Binary is a stream that is not valid UTF-8, JSON or not.
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
	top     byte // first non-whitespace byte, 0 if none yet
	js      jsonstream.Tokenizer
}

// Write feeds p to the classifier. It never fails and always returns
// len(p), nil.
func (c *Classifier) Write(p []byte) (int, error) { return c.WriteOutline(p, nil) }

// WriteOutline is Write that also records the outline of the stream in s
// (nil: none) from the classifier's own JSON scan, as s.Write would: one
// pass over the bytes instead of two. Every write of the stream goes
// through WriteOutline with the same s; s is not written to directly. The
// scan, and so the outline, stops at the first byte that is not UTF-8: the
// outline of a Binary stream is not shown.
func (c *Classifier) WriteOutline(p []byte, s *Shape) (int, error) {
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
	if !c.jsonOff {
		c.scanJSON(p, s)
	}
	if !c.badUTF8 {
		c.checkUTF8(p)
		c.jsonOff = c.jsonOff || c.badUTF8 // binary, whatever the scan says
	}
	c.n += int64(len(p))
	return len(p), nil
}

var newline = []byte{'\n'}

// scanJSON runs the JSON scanner over the part of p that lies within the
// first scanLimit bytes of the stream, and past it only looks for the
// first non-whitespace byte if none has been seen yet. While s (when not
// nil) records an outline, the scanner reports s's events to it.
func (c *Classifier) scanJSON(p []byte, s *Shape) {
	if room := scanLimit - c.n; room > 0 {
		q := p
		if int64(len(q)) > room {
			q = q[:room]
		}
		r := q
		if s != nil && !s.done {
			r = r[s.scan(&c.js, r):]
		}
		_, ev := c.js.Scan(r) // watching nothing: it stops only at an error
		c.top = c.js.First()
		if ev == jsonstream.Bad {
			c.jsonOff = true
			return
		}
		p = p[len(q):]
	}
	if len(p) == 0 {
		return
	}
	// Past the limit: only the first non-whitespace byte still matters.
	// Once it is seen the scan is over, even when it is a NUL byte (which
	// top cannot tell from "none yet").
	if c.top == 0 {
		for _, b := range p {
			if !isSpace(b) {
				c.top = b
				c.jsonOff = true
				return
			}
		}
		return
	}
	c.jsonOff = true
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
	switch {
	case c.n == 0:
		return Text
	case c.badUTF8 || c.nc > 0:
		return Binary
	case c.isJSON():
		return JSON
	}
	return Text
}

func (c *Classifier) isJSON() bool {
	if c.js.Err() != nil {
		return false
	}
	if c.n > scanLimit {
		return (c.top == '{' || c.top == '[') && (c.lastNS == '}' || c.lastNS == ']')
	}
	return c.js.Complete()
}

// isSpace reports whether b is JSON whitespace.
func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// Reset returns the classifier to its zero state, ready for a new stream.
func (c *Classifier) Reset() { *c = Classifier{} }

// Of classifies a whole slice. It returns the same kind and line count as
// writing b to a zero Classifier.
func Of(b []byte) (kind Kind, lines int64) {
	var c Classifier
	c.Write(b)
	return c.Kind(), c.Lines()
}
