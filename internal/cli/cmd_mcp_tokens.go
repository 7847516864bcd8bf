package cli

import (
	"github.com/hybridctx/hybridctx"
	"github.com/spf13/pflag"
)

// mcpTokensLong is mcp's help on its token flags.
const mcpTokensLong = `
--threshold-tokens N also stores a block over N tokens at or below
--threshold bytes, and --result-threshold-tokens N bounds a result's inline
blocks, notices and links in tokens as --result-threshold does in bytes: a
block or result is offloaded when it exceeds either bound (Claude Code, for
one, refuses a result over 25,000 tokens by default). Tokens are counted by
--tokenizer: estimate (bytes/4, the default with a token flag), o200k_base
or cl100k_base; with a tokenizer, a notice shows the body's token count
(exact up to 1 MiB, marked ≈ beyond, where it is extrapolated). The
result bound is applied to the bytes a result sends, as the most bytes that
cannot hold more tokens: 4 × N under the estimate, N under o200k_base and
cl100k_base (a token is at least one byte).
`

// mcpTokenFlags are mcp's token bounds.
type mcpTokenFlags struct {
	threshold, result int64
	tokenizer         string
}

func (t *mcpTokenFlags) register(f *pflag.FlagSet) {
	f.Int64Var(&t.threshold, "threshold-tokens", 0, "also store a content block over N tokens (0: no token bound)")
	f.Int64Var(&t.result, "result-threshold-tokens", 0, "most tokens the inline blocks of one result may total (0: no token bound)")
	f.StringVar(&t.tokenizer, "tokenizer", "", "count tokens with "+tokenizerNames+" (default estimate with a token flag); notices show the token count")
}

// apply sets the policy's token fields, or returns a usage error.
func (t *mcpTokenFlags) apply(p *hybridctx.Policy) error {
	switch {
	case t.threshold < 0:
		return usagef("--threshold-tokens must be >= 0")
	case t.result < 0:
		return usagef("--result-threshold-tokens must be >= 0")
	}
	name := t.tokenizer
	if name == "" && (t.threshold > 0 || t.result > 0) {
		name = "estimate"
	}
	tk, err := lookupTokenizer(name)
	if err != nil {
		return err
	}
	p.Tokenizer, p.ThresholdTokens, p.ResultThresholdTokens = tk, t.threshold, t.result
	return nil
}
