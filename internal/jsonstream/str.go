package jsonstream

import (
	"bufio"
	"bytes"
	"encoding/base64"
	byteorder "encoding/binary"
	"errors"
	"io"
	"math/bits"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrBadString means a streamed JSON string is not valid JSON.
var ErrBadString = errors.New("jsonstream: malformed JSON string")

// StringReader yields the decoded bytes of a JSON string read from br, whose
// opening quote has been consumed (see NewStringReader); it stops after the closing quote. Its
// output is byte for byte what encoding/json decodes the same string to:
// invalid UTF-8 and unpaired surrogate escapes become U+FFFD, a valid
// surrogate pair one rune. Memory is constant whatever the string's length.
type StringReader struct {
	br      *bufio.Reader
	pending [utf8.UTFMax]byte // decoded bytes that did not fit the caller's buffer
	np, ip  int
	done    bool
	err     error
}

// NewStringReader returns a StringReader of the string at br, whose
// opening quote has been consumed.
func NewStringReader(br *bufio.Reader) *StringReader { return &StringReader{br: br} }

// plain marks the bytes copied as they are: not '"', '\\', a control
// character or the start of a multi-byte character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// decodeRun decodes from buf into out what needs no look beyond buf:
// plain ASCII, whole valid UTF-8 characters, short escapes and \uXXXX
// escapes whose surrogate partner (if any) is in buf too. It returns the
// bytes consumed and written, stopping at the closing quote, at anything
// malformed or cut by the end of buf, and when out is full; special
// handles those one at a time.
//
// Runs of bytes that are copied as they are (everything but '"', '\\'
// and control bytes) move a word at a time; a run holding a byte ≥ 0x80
// is then checked as UTF-8 once, and only a run that is not valid (an
// invalid byte, or a character cut by the end of buf or out) is decoded
// again one character at a time.
func decodeRun(buf, out []byte) (i, w int) {
	slow := 0 // buf[:slow] is decoded one character at a time
	for i < len(buf) && w < len(out) {
		if i >= slow {
			i0, w0 := i, w
			var hi uint64
			i, w, hi = wordRun(buf, out, i, w)
			if hi&0x8080808080808080 != 0 && !utf8.Valid(out[w0:w]) {
				slow, i, w = i, i0, w0
			}
			if i == len(buf) || w == len(out) {
				break
			}
		}
		switch c := buf[i]; {
		case c < utf8.RuneSelf && plain[c]:
			out[w] = c
			i, w = i+1, w+1
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && size == 1 {
				// Not a character: U+FFFD, unless it may be one cut by
				// the end of buf.
				if !utf8.FullRune(buf[i:]) || w+len(replacement) > len(out) {
					return i, w
				}
				copy(out[w:], replacement)
				i, w = i+1, w+len(replacement)
				continue
			}
			if w+size > len(out) {
				return i, w
			}
			// By hand: a call to copy costs more than 2 to 4 bytes.
			out[w], out[w+1] = buf[i], buf[i+1]
			if size > 2 {
				out[w+2] = buf[i+2]
				if size > 3 {
					out[w+3] = buf[i+3]
				}
			}
			i, w = i+size, w+size
		case c == '\\' && i+1 < len(buf):
			e := escapes[buf[i+1]]
			if e == 0 {
				if buf[i+1] != 'u' {
					return i, w
				}
				di, dw := unicodeRun(buf[i:], out[w:])
				if di == 0 {
					return i, w
				}
				i, w = i+di, w+dw
				continue
			}
			out[w] = e
			i, w = i+2, w+1
		default:
			return i, w
		}
	}
	return i, w
}

// wordRun copies buf[i:] to out[w:] eight bytes at a time while neither
// has fewer than eight left, decoding the short escapes it meets on the
// way, up to the first '"', control byte or other escape. It returns the
// new positions and the OR of the bytes copied as they are (whose high
// bits tell whether any is ≥ 0x80). It may write up to seven bytes past
// the returned w, which later writes overwrite.
func wordRun(buf, out []byte, i, w int) (int, int, uint64) {
	var hi uint64
	for i+8 <= len(buf) && w+8 <= len(out) {
		x := byteorder.LittleEndian.Uint64(buf[i:])
		byteorder.LittleEndian.PutUint64(out[w:], x)
		// The lowest byte flagged is always a true match: the borrows
		// that can flag a byte wrongly only run upwards from a match.
		m := (hasLess(x, 0x20) | hasZero(x^0x2222222222222222) | hasZero(x^0x5c5c5c5c5c5c5c5c)) & 0x8080808080808080
		if m == 0 {
			hi |= x
			i, w = i+8, w+8
			continue
		}
		k := bits.TrailingZeros64(m) >> 3
		hi |= x & (1<<(8*k) - 1)
		i, w = i+k, w+k
		if buf[i] != '\\' || i+1 == len(buf) || escapes[buf[i+1]] == 0 {
			break
		}
		out[w] = escapes[buf[i+1]]
		i, w = i+2, w+1
	}
	return i, w, hi
}

// replacement is U+FFFD in UTF-8.
const replacement = "\uFFFD"

// escapes maps the letter of a short escape to its byte (0: not one).
var escapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unicodeRun decodes the \uXXXX escape at buf[0] (and its low surrogate)
// as unicodeEscape does, when buf holds all it needs and out has room; it
// returns 0, 0 otherwise.
func unicodeRun(buf, out []byte) (int, int) {
	if len(out) < utf8.UTFMax {
		return 0, 0
	}
	r := hex4(buf)
	if r < 0 {
		return 0, 0
	}
	if !utf16.IsSurrogate(r) {
		return 6, utf8.EncodeRune(out, r)
	}
	if len(buf) < 12 {
		return 0, 0 // the partner may be in the next read
	}
	if dec := utf16.DecodeRune(r, hex4(buf[6:])); dec != unicode.ReplacementChar {
		return 12, utf8.EncodeRune(out, dec)
	}
	return 6, utf8.EncodeRune(out, unicode.ReplacementChar)
}

// hasZero has the high bit set in each byte of x that is zero (and maybe
// in higher ones after a zero); hasLess, in each byte below n (n <= 128).
func hasZero(x uint64) uint64    { return (x - 0x0101010101010101) & ^x & 0x8080808080808080 }
func hasLess(x, n uint64) uint64 { return (x - 0x0101010101010101*n) & ^x & 0x8080808080808080 }

// Read returns the string's next decoded bytes; io.EOF after the closing
// quote, ErrBadString (or the input's error) when the string is malformed
// or its input ends first.
func (s *StringReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if s.ip < s.np {
			c := copy(p[n:], s.pending[s.ip:s.np])
			s.ip += c
			n += c
			continue
		}
		if s.done || s.err != nil {
			break
		}
		buf, err := s.br.Peek(1)
		if len(buf) == 0 {
			s.err = eofIsBad(err)
			break
		}
		buf, _ = s.br.Peek(s.br.Buffered())
		if i, w := decodeRun(buf, p[n:]); i > 0 {
			n += w
			_, _ = s.br.Discard(i)
			continue
		}
		s.special()
	}
	if n == 0 && s.ip >= s.np {
		if s.err != nil {
			return 0, s.err
		}
		if s.done {
			return 0, io.EOF
		}
	}
	return n, nil
}

// eofIsBad turns the end of input inside a string into ErrBadString.
func eofIsBad(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return ErrBadString
	}
	return err
}

// special decodes the one construct at the reader's position that is not
// plain: the closing quote, an escape or a non-ASCII character.
func (s *StringReader) special() {
	b, _ := s.br.Peek(1)
	switch c := b[0]; {
	case c == '"':
		_, _ = s.br.Discard(1)
		s.done = true
	case c < 0x20:
		s.err = ErrBadString
	case c == '\\':
		s.escape()
	default:
		s.nonASCII()
	}
}

func (s *StringReader) emit(r rune) {
	s.np, s.ip = utf8.EncodeRune(s.pending[:], r), 0
}

func (s *StringReader) escape() {
	b, err := s.br.Peek(2)
	if len(b) < 2 {
		s.err = eofIsBad(err)
		return
	}
	var r rune
	switch b[1] {
	case '"', '\\', '/':
		r = rune(b[1])
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
		s.unicodeEscape()
		return
	default:
		s.err = ErrBadString
		return
	}
	_, _ = s.br.Discard(2)
	s.emit(r)
}

// unicodeEscape decodes \uXXXX, and the low half that follows a high
// surrogate, as encoding/json does.
func (s *StringReader) unicodeEscape() {
	b, err := s.br.Peek(6)
	r := hex4(b)
	if r < 0 {
		s.err = eofIsBad(err)
		if err == nil {
			s.err = ErrBadString
		}
		return
	}
	_, _ = s.br.Discard(6)
	if utf16.IsSurrogate(r) {
		next, _ := s.br.Peek(6)
		if dec := utf16.DecodeRune(r, hex4(next)); dec != unicode.ReplacementChar {
			_, _ = s.br.Discard(6)
			s.emit(dec)
			return
		}
		r = unicode.ReplacementChar
	}
	s.emit(r)
}

// hex4 decodes the XXXX of a \uXXXX at b[0], or returns -1.
func hex4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// nonASCII copies one UTF-8 character, or writes U+FFFD for a byte that
// does not start one.
func (s *StringReader) nonASCII() {
	b, _ := s.br.Peek(utf8.UTFMax)
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError && size == 1 {
		_, _ = s.br.Discard(1)
		s.emit(unicode.ReplacementChar)
		return
	}
	s.np, s.ip = copy(s.pending[:], b[:size]), 0
	_, _ = s.br.Discard(size)
}

// B64Reader decodes standard base64 read from r, in large chunks, exactly
// as base64.StdEncoding.Decode decodes the whole text (what encoding/json
// does for a []byte): '\r' and '\n' are skipped, and padding may only end
// the text.
//
// Why not encoding/base64's stream decoder: measured through the proxy
// (.ci/bench-mcp-e2e.sh, a 32 MiB image over stdio, 6 interleaved runs on
// a loaded 2-core machine), the stream decoder behind a StringReader took
// the answer from a median 0.37 s to 0.63 s, and BenchmarkStreamPayload's
// base64 case used 2.3 times the CPU: it decodes 768 bytes a read and
// cannot take a string's plain runs straight from its buffer (readText).
// It also accepts text after padding when a read ends at the padding,
// so its answer would depend on how the input's reads fall.
type B64Reader struct {
	r      io.Reader
	in     []byte
	nin    int // characters carried to the next chunk (< 4)
	dec    []byte
	out    []byte
	padded bool
	eof    bool
	err    error
}

// NewB64Reader returns a B64Reader of r that reads size bytes of text at
// a time (at least 4); r may be a StringReader, whose plain runs it takes
// straight from the string's buffer.
func NewB64Reader(r io.Reader, size int) *B64Reader {
	size = max(size/4*4, 4)
	return &B64Reader{r: r, in: make([]byte, size), dec: make([]byte, size/4*3)}
}

// Read decodes into p directly when p has room for a whole chunk's bytes
// (as the offload pipeline's large buffers have), else through its own
// buffer.
func (b *B64Reader) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if b.eof {
			return 0, io.EOF
		}
		k, err := b.readText(b.in[b.nin:])
		w := b.nin + k
		if got := b.in[b.nin:w]; bytes.IndexByte(got, '\n') >= 0 || bytes.IndexByte(got, '\r') >= 0 {
			w = b.nin + dropLineEnds(got)
		}
		switch {
		case errors.Is(err, io.EOF):
			b.eof = true
		case err != nil:
			b.err = err
			continue
		}
		use := w
		if !b.eof {
			use -= w % 4
		}
		if use > 0 {
			if b.padded {
				b.err = base64.CorruptInputError(0) // text after the padding
				continue
			}
			direct := len(p) > 0 && len(p) >= use/4*3
			dst := b.dec
			if direct {
				dst = p
			}
			m, derr := base64.StdEncoding.Decode(dst, b.in[:use])
			if derr != nil {
				b.err = derr
				continue
			}
			b.padded = b.in[use-1] == '='
			b.nin = copy(b.in, b.in[use:w])
			if direct {
				return m, nil
			}
			b.out = dst[:m]
			continue
		}
		b.nin = copy(b.in, b.in[use:w])
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// readText reads base64 text into dst. When it comes from a JSON string
// (a StringReader), a run with no quote, backslash or line end is copied
// straight from the string's buffer: base64 text has nothing to unescape,
// and any other byte JSON would refuse raw (a control byte) the base64
// decoder refuses too, so the decoding is still exactly encoding/json's.
// Everything else goes through the string's decoder.
func (b *B64Reader) readText(dst []byte) (int, error) {
	sr, ok := b.r.(*StringReader)
	if !ok || sr.ip < sr.np || sr.done || sr.err != nil {
		return b.r.Read(dst)
	}
	if sr.br.Buffered() == 0 {
		// As StringReader.Read does: the end of input inside the string is
		// an error.
		if p, err := sr.br.Peek(1); len(p) == 0 {
			sr.err = eofIsBad(err)
			return 0, sr.err
		}
	}
	buf, _ := sr.br.Peek(min(sr.br.Buffered(), len(dst)))
	for _, c := range [...]byte{'"', '\\', '\n', '\r'} {
		if i := bytes.IndexByte(buf, c); i >= 0 {
			buf = buf[:i]
		}
	}
	if len(buf) == 0 {
		return sr.Read(dst)
	}
	n := copy(dst, buf)
	_, _ = sr.br.Discard(n)
	return n, nil
}

// dropLineEnds removes the '\r' and '\n' of b in place and returns the
// length left.
func dropLineEnds(b []byte) int {
	w := 0
	for _, c := range b {
		if c != '\r' && c != '\n' {
			b[w] = c
			w++
		}
	}
	return w
}
