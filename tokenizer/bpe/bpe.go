// Package bpe counts tokens exactly as OpenAI's o200k_base and cl100k_base
// encodings do, for a hybridctx.Policy's Tokenizer. The vocabularies are
// compiled in (nothing is downloaded at run time); they add about 15 MB to
// a binary and are loaded on the first count, so only programs that import
// this package pay for them. See docs/history.md, "Tokens".
package bpe

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hybridctx/hybridctx"
	"github.com/tiktoken-go/tokenizer"
)

// The encodings this package counts with.
const (
	O200kBase  = "o200k_base"
	Cl100kBase = "cl100k_base"
)

// ErrUnknownEncoding is returned by New for a name it does not know.
var ErrUnknownEncoding = errors.New("bpe: unknown encoding")

// Tokenizer counts tokens with one BPE encoding. It is safe for concurrent
// use; the vocabulary loads on the first count.
type Tokenizer struct {
	name string
	once sync.Once
	c    tokenizer.Codec
	err  error
}

var _ hybridctx.Tokenizer = (*Tokenizer)(nil)

// New returns the tokenizer of the named encoding: "o200k_base" or
// "cl100k_base". Any other name wraps ErrUnknownEncoding.
func New(name string) (*Tokenizer, error) {
	switch name {
	case O200kBase, Cl100kBase:
		return &Tokenizer{name: name}, nil
	}
	return nil, fmt.Errorf("%w: %q (want %s or %s)", ErrUnknownEncoding, name, O200kBase, Cl100kBase)
}

// Name returns the encoding's name.
func (t *Tokenizer) Name() string { return t.name }

// CountTokens returns the number of tokens of text. Special-token texts
// such as "<|endoftext|>" count as ordinary text, as in a tool result.
// Should the encoder ever fail, it falls back to hybridctx.EstimateTokens
// (one token per four bytes) rather than count nothing.
func (t *Tokenizer) CountTokens(text string) int64 {
	t.once.Do(func() { t.c, t.err = tokenizer.Get(tokenizer.Encoding(t.name)) })
	if t.err != nil {
		return hybridctx.EstimateTokens{}.CountTokens(text)
	}
	n, err := t.c.Count(text)
	if err != nil {
		return hybridctx.EstimateTokens{}.CountTokens(text)
	}
	return int64(n)
}
