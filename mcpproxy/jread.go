package mcpproxy

import (
	"bufio"
	byteorder "encoding/binary"
	"encoding/json"
	"errors"
	"io"
)

// Reading JSON from a stream in bounded memory: jreader walks one value at a
// time, checking it exactly as json.Valid does (nesting depth included),
// and copies its bytes as written to a sink (a message skeleton, a spool
// file, a pipe into the offloader, or nowhere). Only the pieces a caller
// asks for are held: object keys at the levels it walks, and the small
// values it takes.

// errBadJSON means a streamed message is not valid JSON.
var errBadJSON = errors.New("mcpproxy: malformed JSON")

// maxNesting is encoding/json's nesting limit: json.Valid refuses a value
// nested deeper.
const maxNesting = 10000

// sink receives the bytes of a value as they are read.
type sink interface {
	io.Writer
	io.ByteWriter
}

// discard is a sink that keeps nothing.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteByte(byte) error        { return nil }

// jreader reads JSON values from br.
type jreader struct {
	br *bufio.Reader
}

// eofBad turns the end of input inside a value into errBadJSON.
func eofBad(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return errBadJSON
	}
	return err
}

// peek returns the next byte after any whitespace, which is copied to w;
// the byte itself is not consumed. At the end of input it returns io.EOF.
func (j *jreader) peek(w sink) (byte, error) {
	for {
		b, err := j.br.Peek(1)
		if len(b) == 0 {
			if err == nil {
				err = io.EOF
			}
			return 0, err
		}
		switch c := b[0]; c {
		case ' ', '\t', '\n', '\r':
			_, _ = j.br.Discard(1)
			if err := w.WriteByte(c); err != nil {
				return 0, err
			}
		default:
			return c, nil
		}
	}
}

// next is peek where the end of input is malformed JSON.
func (j *jreader) next(w sink) (byte, error) {
	c, err := j.peek(w)
	if err != nil {
		return 0, eofBad(err)
	}
	return c, nil
}

// punct consumes the byte c (already peeked) and copies it.
func (j *jreader) punct(w sink, c byte) error {
	_, _ = j.br.Discard(1)
	return w.WriteByte(c)
}

// value copies the value at the reader (after whitespace) to w; depth is
// the nesting of the containers around it.
func (j *jreader) value(w sink, depth int) error {
	c, err := j.next(w)
	if err != nil {
		return err
	}
	switch {
	case c == '"':
		return j.str(w)
	case c == '{':
		return j.members(w, depth+1, nil, false)
	case c == '[':
		return j.elements(w, depth+1, nil)
	case c == '-' || c >= '0' && c <= '9':
		return j.number(w)
	case c == 't':
		return j.literal(w, "true")
	case c == 'f':
		return j.literal(w, "false")
	case c == 'n':
		return j.literal(w, "null")
	}
	return errBadJSON
}

// members reads the object at the reader ('{' next), copying its
// punctuation and keys to w and calling member after each key's colon;
// member must read the value (nil: copy it to w). With decode false, keys
// are not decoded (member gets "").
func (j *jreader) members(w sink, depth int, member func(key string) error, decode bool) error {
	if depth > maxNesting {
		return errBadJSON
	}
	if err := j.punct(w, '{'); err != nil {
		return err
	}
	c, err := j.next(w)
	if err != nil {
		return err
	}
	if c == '}' {
		return j.punct(w, c)
	}
	var kb *keyBuf
	if decode {
		kb = new(keyBuf)
	}
	for {
		if c != '"' {
			return errBadJSON
		}
		key := ""
		if decode {
			kb.n = 0
			if err := j.str(&tee{w, kb}); err != nil {
				return err
			}
			key = kb.key()
		} else if err := j.str(w); err != nil {
			return err
		}
		if c, err = j.next(w); err != nil {
			return err
		}
		if c != ':' {
			return errBadJSON
		}
		if err := j.punct(w, c); err != nil {
			return err
		}
		if member == nil {
			err = j.value(w, depth)
		} else {
			err = member(key)
		}
		if err != nil {
			return err
		}
		if end, err := j.after(w, '}'); end || err != nil {
			return err
		}
		if c, err = j.next(w); err != nil {
			return err
		}
	}
}

// elements reads the array at the reader ('[' next) like members, calling
// element for each value with its index (nil: copy it to w).
func (j *jreader) elements(w sink, depth int, element func(i int) error) error {
	if depth > maxNesting {
		return errBadJSON
	}
	if err := j.punct(w, '['); err != nil {
		return err
	}
	c, err := j.next(w)
	if err != nil {
		return err
	}
	if c == ']' {
		return j.punct(w, c)
	}
	for i := 0; ; i++ {
		if element == nil {
			err = j.value(w, depth)
		} else {
			err = element(i)
		}
		if err != nil {
			return err
		}
		if end, err := j.after(w, ']'); end || err != nil {
			return err
		}
	}
}

// after reads what follows a member or element: the container's closing
// byte (end) or a comma, copying it to w; anything else is bad JSON.
func (j *jreader) after(w sink, closing byte) (end bool, err error) {
	c, err := j.next(w)
	if err != nil {
		return false, err
	}
	switch c {
	case closing:
		return true, j.punct(w, c)
	case ',':
		return false, j.punct(w, c)
	}
	return false, errBadJSON
}

// str copies the string at the reader ('"' next), checking its escapes
// and that it holds no control character.
func (j *jreader) str(w sink) error {
	if err := j.punct(w, '"'); err != nil {
		return err
	}
	for {
		b, err := j.br.Peek(1)
		if len(b) == 0 {
			return eofBad(err)
		}
		b, _ = j.br.Peek(j.br.Buffered())
		if i := plainRaw(b); i > 0 {
			if _, err := w.Write(b[:i]); err != nil {
				return err
			}
			_, _ = j.br.Discard(i)
			continue
		}
		switch b[0] {
		case '"':
			return j.punct(w, '"')
		case '\\':
			if err := j.escape(w); err != nil {
				return err
			}
		default:
			return errBadJSON // a control character
		}
	}
}

// escape copies the escape at the reader.
func (j *jreader) escape(w sink) error {
	b, err := j.br.Peek(2)
	if len(b) < 2 {
		return eofBad(err)
	}
	n := 2
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
	case 'u':
		if b, err = j.br.Peek(6); len(b) < 6 {
			return eofBad(err)
		}
		if hex4(b) < 0 {
			return errBadJSON
		}
		n = 6
	default:
		return errBadJSON
	}
	if _, err := w.Write(b[:n]); err != nil {
		return err
	}
	_, _ = j.br.Discard(n)
	return nil
}

// plainRaw returns how many bytes at the start of b a string holds as
// they are: not '"', '\\' or a control character.
func plainRaw(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := byteorder.LittleEndian.Uint64(b[i:])
		if (hasLess(x, 0x20)|hasZero(x^0x2222222222222222)|hasZero(x^0x5c5c5c5c5c5c5c5c))&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
			break
		}
	}
	return i
}

// number copies the number at the reader.
func (j *jreader) number(w sink) error {
	digits := func() (int, error) {
		n := 0
		for {
			b, err := j.br.Peek(1)
			if len(b) == 0 && err != nil && !errors.Is(err, io.EOF) {
				return n, err
			}
			if len(b) == 0 || b[0] < '0' || b[0] > '9' {
				return n, nil
			}
			if err := j.punct(w, b[0]); err != nil {
				return n, err
			}
			n++
		}
	}
	optional := func(set string) (bool, error) {
		b, err := j.br.Peek(1)
		if len(b) == 0 && err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		for i := 0; len(b) > 0 && i < len(set); i++ {
			if b[0] == set[i] {
				return true, j.punct(w, b[0])
			}
		}
		return false, nil
	}
	if _, err := optional("-"); err != nil {
		return err
	}
	zero, err := optional("0")
	if err != nil {
		return err
	}
	if !zero {
		if n, err := digits(); err != nil || n == 0 {
			return eofBad(err)
		}
	}
	for _, part := range []string{".", "eE"} {
		ok, err := optional(part)
		if err != nil {
			return err
		}
		if !ok {
			continue // no fraction, or no exponent
		}
		if part == "eE" {
			if _, err := optional("+-"); err != nil {
				return err
			}
		}
		if n, err := digits(); err != nil || n == 0 {
			return eofBad(err)
		}
	}
	return nil
}

// literal copies true, false or null.
func (j *jreader) literal(w sink, lit string) error {
	b, err := j.br.Peek(len(lit))
	if len(b) < len(lit) {
		return eofBad(err)
	}
	if string(b) != lit {
		return errBadJSON
	}
	_, _ = j.br.Discard(len(lit))
	_, err = w.Write(b)
	return err
}

// small reads the value at the reader into memory, copying it to w too.
func (j *jreader) small(w sink, depth int) (json.RawMessage, error) {
	if _, err := j.next(w); err != nil { // whitespace before it: not its own
		return nil, err
	}
	var buf rawBuf
	if err := j.value(&tee{w, &buf}, depth); err != nil {
		return nil, err
	}
	return json.RawMessage(buf), nil
}

// keyBuf holds the first bytes of an object key: enough to decode any key
// a walker looks for (none takes more than 64 bytes, escapes included).
type keyBuf struct {
	b [64]byte
	n int
}

func (k *keyBuf) Write(p []byte) (int, error) {
	for _, c := range p {
		_ = k.WriteByte(c)
	}
	return len(p), nil
}

func (k *keyBuf) WriteByte(c byte) error {
	if k.n < len(k.b) {
		k.b[k.n] = c
	}
	k.n++
	return nil
}

// key returns the key decoded, or "" for one too long to be looked for.
func (k *keyBuf) key() string {
	var s string
	if k.n > len(k.b) || json.Unmarshal(k.b[:k.n], &s) != nil {
		return ""
	}
	return s
}

// rawBuf is an in-memory sink.
type rawBuf []byte

func (r *rawBuf) Write(p []byte) (int, error) { *r = append(*r, p...); return len(p), nil }
func (r *rawBuf) WriteByte(c byte) error      { *r = append(*r, c); return nil }

// tee copies to two sinks.
type tee struct{ a, b sink }

func (t *tee) Write(p []byte) (int, error) {
	if _, err := t.a.Write(p); err != nil {
		return 0, err
	}
	return t.b.Write(p)
}

func (t *tee) WriteByte(c byte) error {
	if err := t.a.WriteByte(c); err != nil {
		return err
	}
	return t.b.WriteByte(c)
}
