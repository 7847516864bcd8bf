package cli

import (
	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/tokenizer/bpe"
)

// tokenizerNames are the names --tokenizer takes, for help texts.
const tokenizerNames = "estimate (bytes/4), o200k_base or cl100k_base"

// lookupTokenizer returns the tokenizer --tokenizer names, or nil for "":
// "estimate" (or "bytes/4", its Name) is hybridctx.EstimateTokens, and
// o200k_base and cl100k_base count exactly with tokenizer/bpe. Any other
// name is a usage error. Every command's --tokenizer uses it.
func lookupTokenizer(name string) (hybridctx.Tokenizer, error) {
	switch name {
	case "":
		return nil, nil
	case "estimate", hybridctx.EstimateTokens{}.Name():
		return hybridctx.EstimateTokens{}, nil
	}
	t, err := bpe.New(name)
	if err != nil {
		return nil, usagef("--tokenizer %q: want %s", name, tokenizerNames)
	}
	return t, nil
}
