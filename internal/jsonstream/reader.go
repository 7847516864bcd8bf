// Package jsonstream reads JSON from a stream in bounded memory, for the
// MCP proxy's long messages (see docs/mcp-proxy.md).
//
// A Reader walks one value at a time, checking it exactly as json.Valid
// does (the nesting depth included, which the Reader tracks itself) with
// the package's Tokenizer, the push tokenizer every JSON scan of the
// module uses (the classifier, the notice's outline, the id scanner), and
// copies its bytes as written to a Sink (a message skeleton, a spool file,
// a pipe into the offloader, or nowhere). Only the pieces a caller asks for
// are held: object keys at the levels it walks, and the small values it
// takes. A StringReader streams a JSON string's decoded bytes, a B64Reader
// decodes base64 text as it is read, an IDScanner finds the id of a
// message that cannot be read whole, and EachMember checks a short message
// and walks its members in one pass.
package jsonstream

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
)

// ErrBadJSON means a streamed value is not valid JSON.
var ErrBadJSON = errors.New("jsonstream: malformed JSON")

// MaxNesting is encoding/json's nesting limit: json.Valid refuses a value
// nested deeper.
const MaxNesting = 10000

// Sink receives the bytes of a value as they are read.
type Sink interface {
	io.Writer
	io.ByteWriter
}

// Discard is a Sink that keeps nothing.
type Discard struct{}

// Write discards p.
func (Discard) Write(p []byte) (int, error) { return len(p), nil }

// WriteByte discards a byte.
func (Discard) WriteByte(byte) error { return nil }

// Reader reads JSON values from a buffered reader.
type Reader struct {
	br    *bufio.Reader
	depth int // containers open around the reader's position
	tok   Tokenizer
}

// NewReader returns a Reader of br whose input starts inside depth open
// containers (0 for a whole document; 1 for a value read out of a
// message's object), so the nesting limit counts them too.
func NewReader(br *bufio.Reader, depth int) *Reader {
	return &Reader{br: br, depth: depth}
}

// Buffered returns the reader's input, for a caller that reads past a
// value itself (a string streamed by a StringReader, bytes peeked ahead).
func (j *Reader) Buffered() *bufio.Reader { return j.br }

// enter opens a container, refusing one nested deeper than MaxNesting.
func (j *Reader) enter() error {
	j.depth++
	if j.depth > MaxNesting {
		return ErrBadJSON
	}
	return nil
}

func (j *Reader) leave() { j.depth-- }

// EOFBad turns the end of input inside a value into ErrBadJSON.
func EOFBad(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return ErrBadJSON
	}
	return err
}

// Peek returns the next byte after any whitespace, which is copied to w;
// the byte itself is not consumed. At the end of input it returns io.EOF.
func (j *Reader) Peek(w Sink) (byte, error) {
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

// Next is Peek where the end of input is malformed JSON.
func (j *Reader) Next(w Sink) (byte, error) {
	c, err := j.Peek(w)
	if err != nil {
		return 0, EOFBad(err)
	}
	return c, nil
}

// punct consumes the byte c (already peeked) and copies it.
func (j *Reader) punct(w Sink, c byte) error {
	_, _ = j.br.Discard(1)
	return w.WriteByte(c)
}

// Value copies the value at the reader (after whitespace) to w. The
// Tokenizer checks it, started at the reader's depth, and the bytes it
// consumes are copied as they are, a buffer at a time.
func (j *Reader) Value(w Sink) error {
	j.tok.Reset(j.depth)
	j.tok.Watch(StopValueEnd, 0)
	for {
		b, err := j.br.Peek(1)
		if len(b) == 0 {
			if errors.Is(err, io.EOF) && j.tok.Complete() {
				return nil // a number ended by the input
			}
			return EOFBad(err)
		}
		b, _ = j.br.Peek(j.br.Buffered())
		n, ev := j.tok.Scan(b)
		if ev == Bad {
			return ErrBadJSON
		}
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		_, _ = j.br.Discard(n)
		if ev == ValueEnd {
			return nil
		}
	}
}

// Members reads the object at the reader ('{' next), copying its
// punctuation and keys to w and calling member after each key's colon;
// member must read the value (nil: copy it to w). With decode false, keys
// are not decoded (member gets "").
func (j *Reader) Members(w Sink, member func(key string) error, decode bool) error {
	defer j.leave()
	if err := j.enter(); err != nil {
		return err
	}
	if err := j.punct(w, '{'); err != nil {
		return err
	}
	c, err := j.Next(w)
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
			return ErrBadJSON
		}
		key := ""
		if decode {
			kb.n = 0
			if err := j.Str(&tee{w, kb}); err != nil {
				return err
			}
			key = kb.key()
		} else if err := j.Str(w); err != nil {
			return err
		}
		if c, err = j.Next(w); err != nil {
			return err
		}
		if c != ':' {
			return ErrBadJSON
		}
		if err := j.punct(w, c); err != nil {
			return err
		}
		if member == nil {
			err = j.Value(w)
		} else {
			err = member(key)
		}
		if err != nil {
			return err
		}
		if end, err := j.after(w, '}'); end || err != nil {
			return err
		}
		if c, err = j.Next(w); err != nil {
			return err
		}
	}
}

// Elements reads the array at the reader ('[' next) like Members, calling
// element for each value with its index (nil: copy it to w).
func (j *Reader) Elements(w Sink, element func(i int) error) error {
	defer j.leave()
	if err := j.enter(); err != nil {
		return err
	}
	if err := j.punct(w, '['); err != nil {
		return err
	}
	c, err := j.Next(w)
	if err != nil {
		return err
	}
	if c == ']' {
		return j.punct(w, c)
	}
	for i := 0; ; i++ {
		if element == nil {
			err = j.Value(w)
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
func (j *Reader) after(w Sink, closing byte) (end bool, err error) {
	c, err := j.Next(w)
	if err != nil {
		return false, err
	}
	switch c {
	case closing:
		return true, j.punct(w, c)
	case ',':
		return false, j.punct(w, c)
	}
	return false, ErrBadJSON
}

// Str copies the string at the reader ('"' next), checking its escapes
// and that it holds no control character.
func (j *Reader) Str(w Sink) error {
	if b, err := j.br.Peek(1); len(b) == 0 || b[0] != '"' {
		return EOFBad(err)
	}
	return j.Value(w)
}

// Small reads the value at the reader into memory, copying it to w too.
func (j *Reader) Small(w Sink) (json.RawMessage, error) {
	if _, err := j.Next(w); err != nil { // whitespace before it: not its own
		return nil, err
	}
	var buf Buf
	if err := j.Value(&tee{w, &buf}); err != nil {
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

// Buf is an in-memory Sink.
type Buf []byte

// Write appends p.
func (r *Buf) Write(p []byte) (int, error) { *r = append(*r, p...); return len(p), nil }

// WriteByte appends c.
func (r *Buf) WriteByte(c byte) error { *r = append(*r, c); return nil }

// tee copies to two sinks.
type tee struct{ a, b Sink }

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
