// Package bpe counts tokens exactly as OpenAI's o200k_base and cl100k_base
// encodings do, for a hybridctx.Policy's Tokenizer: the same count as the
// reference encoder for every input, in pure Go, without allocating. The
// vocabularies are compiled in (nothing is downloaded at run time) in a
// compact form, about 2.4 MB of a binary, and loaded on a tokenizer's
// first count. See docs/history.md, "Tokens".
package bpe

import (
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx"
)

// The encodings this package counts with.
const (
	O200kBase  = "o200k_base"
	Cl100kBase = "cl100k_base"
)

// ErrUnknownEncoding is returned by New for a name it does not know.
var ErrUnknownEncoding = errors.New("bpe: unknown encoding")

// encoding is one encoding's vocabulary and split pattern, loaded once per
// process and shared by its tokenizers.
type encoding struct {
	once  sync.Once
	data  *string
	next  func(text string, p int) int
	v     *vocab
	err   error
	cache pieceCache
}

var encodings = map[string]*encoding{
	O200kBase:  {data: &o200kData, next: nextO200k},
	Cl100kBase: {data: &cl100kData, next: nextCl100k},
}

func (e *encoding) load() {
	e.once.Do(func() {
		classesOnce.Do(buildClasses)
		e.v, e.err = loadVocab(*e.data)
	})
}

// Tokenizer counts tokens with one BPE encoding. It is safe for concurrent
// use; the vocabulary loads on the first count.
type Tokenizer struct {
	name string
	enc  *encoding
}

var _ hybridctx.Tokenizer = (*Tokenizer)(nil)

// New returns the tokenizer of the named encoding: "o200k_base" or
// "cl100k_base". Any other name wraps ErrUnknownEncoding.
func New(name string) (*Tokenizer, error) {
	if e, ok := encodings[name]; ok {
		return &Tokenizer{name: name, enc: e}, nil
	}
	return nil, fmt.Errorf("%w: %q (want %s or %s)", ErrUnknownEncoding, name, O200kBase, Cl100kBase)
}

// Name returns the encoding's name.
func (t *Tokenizer) Name() string { return t.name }

// scratchPool holds merge state and replacement buffers for reuse.
var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// CountTokens returns the number of tokens of text. Special-token texts
// such as "<|endoftext|>" count as ordinary text, as in a tool result.
// Each byte that is not part of valid UTF-8 counts as U+FFFD, as in the
// reference encoder, and DEL (U+007F) counts nothing, as there. Should the embedded vocabulary ever fail to load, it
// falls back to hybridctx.EstimateTokens (one token per four bytes).
func (t *Tokenizer) CountTokens(text string) int64 {
	e := t.enc
	e.load()
	if e.err != nil {
		return hybridctx.EstimateTokens{}.CountTokens(text)
	}
	var s *scratch
	if !utf8.ValidString(text) {
		s = scratchPool.Get().(*scratch)
		text = s.replace(text)
	}
	var n int64
	for p := 0; p < len(text); {
		if text[p] == 0x7f { // DEL is skipped: see split.go
			p++
			continue
		}
		q := e.next(text, p)
		n += int64(e.countPiece(text[p:q], packAt(text, p, q), &s))
		p = q
	}
	if s != nil {
		s.release()
	}
	return n
}

// countPiece counts the tokens of one piece of the split, whose first 8
// bytes are w (pack). s is fetched from the pool when a long piece first
// needs it.
func (e *encoding) countPiece(piece string, w uint64, s **scratch) int {
	v := e.v
	if len(piece) == 1 {
		return 1
	}
	if len(piece) <= 4 {
		// The two- and short-token tables answer these from the
		// processor's cache, faster than the piece cache would.
		if v.rank(piece) != noRank {
			return 1
		}
		return v.mergeSmall(piece)
	}
	h := hashW(piece, w)
	if n, ok := e.cache.get(piece, h, w); ok {
		return n
	}
	if v.rankOf(piece, h, w) != noRank {
		e.cache.put(piece, h, w, 1)
		return 1
	}
	var n int
	if len(piece) <= smallPiece {
		n = v.mergeSmall(piece)
	} else {
		if *s == nil {
			*s = scratchPool.Get().(*scratch)
		}
		n = v.mergeLarge(piece, *s)
	}
	e.cache.put(piece, h, w, n)
	return n
}

// replace returns text with each byte that is not part of valid UTF-8
// replaced by U+FFFD, built in the scratch's buffer.
func (s *scratch) replace(text string) string {
	b := s.buf[:0]
	for i := 0; i < len(text); {
		r, w := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && w == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, text[i:i+w]...)
		}
		i += w
	}
	s.buf = b
	return string(b)
}

// release returns s to the pool unless it grew past maxPooled.
func (s *scratch) release() {
	if cap(s.next) > maxPooled+1 || cap(s.buf) > 4*maxPooled {
		return
	}
	scratchPool.Put(s)
}
