package mcpproxy

import (
	"bufio"
	"errors"
	"io"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// errBadString means a streamed JSON string is not valid JSON.
var errBadString = errors.New("mcpproxy: malformed JSON string")

// strReader yields the decoded bytes of a JSON string read from br, whose
// opening quote has been consumed; it stops after the closing quote. Its
// output is byte for byte what encoding/json decodes the same string to:
// invalid UTF-8 and unpaired surrogate escapes become U+FFFD, a valid
// surrogate pair one rune. Memory is constant whatever the string's length.
type strReader struct {
	br      *bufio.Reader
	pending [utf8.UTFMax]byte // decoded bytes that did not fit the caller's buffer
	np, ip  int
	done    bool
	err     error
}

// plain marks the bytes copied as they are: not '"', '\\', a control
// character or the start of a multi-byte character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (s *strReader) Read(p []byte) (int, error) {
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
		i := 0
		for i < len(buf) && i < len(p)-n && plain[buf[i]] {
			i++
		}
		if i > 0 {
			copy(p[n:], buf[:i])
			n += i
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

// eofIsBad turns the end of input inside a string into errBadString.
func eofIsBad(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return errBadString
	}
	return err
}

// special decodes the one construct at the reader's position that is not
// plain: the closing quote, an escape or a non-ASCII character.
func (s *strReader) special() {
	b, _ := s.br.Peek(1)
	switch c := b[0]; {
	case c == '"':
		_, _ = s.br.Discard(1)
		s.done = true
	case c < 0x20:
		s.err = errBadString
	case c == '\\':
		s.escape()
	default:
		s.nonASCII()
	}
}

func (s *strReader) emit(r rune) {
	s.np, s.ip = utf8.EncodeRune(s.pending[:], r), 0
}

func (s *strReader) escape() {
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
		s.err = errBadString
		return
	}
	_, _ = s.br.Discard(2)
	s.emit(r)
}

// unicodeEscape decodes \uXXXX, and the low half that follows a high
// surrogate, as encoding/json does.
func (s *strReader) unicodeEscape() {
	b, err := s.br.Peek(6)
	r := hex4(b)
	if r < 0 {
		s.err = eofIsBad(err)
		if err == nil {
			s.err = errBadString
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
func (s *strReader) nonASCII() {
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
