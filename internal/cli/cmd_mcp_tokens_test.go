package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/tokenizer/bpe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPTokenFlagErrors: each token flag's bad value is one categorical
// usage line, before anything starts.
func TestMCPTokenFlagErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"negative threshold-tokens":        {[]string{"--threshold-tokens", "-1"}, "--threshold-tokens must be >= 0"},
		"negative result-threshold-tokens": {[]string{"--result-threshold-tokens", "-5"}, "--result-threshold-tokens must be >= 0"},
		"threshold-tokens not a number":    {[]string{"--threshold-tokens", "many"}, "--threshold-tokens: the value is not a whole number"},
		"result-threshold-tokens 1e3":      {[]string{"--result-threshold-tokens", "1e3"}, "--result-threshold-tokens: the value is not a whole number"},
		"unknown tokenizer":                {[]string{"--tokenizer", "p50k_base", "--threshold-tokens", "10"}, `--tokenizer "p50k_base": want estimate (bytes/4), o200k_base or cl100k_base`},
		"empty-looking tokenizer":          {[]string{"--tokenizer", " "}, `--tokenizer " "`},
		"64MiB counted under o200k_base":   {[]string{"--threshold", "67108864", "--threshold-tokens", "25000", "--tokenizer", "o200k_base"}, "the byte threshold must be at most 1048576 bytes, not 67108864"},
	}
	for name, c := range cases {
		args := append(append([]string{"mcp", "--workspace", "mem://"}, c.args...), "--", "x")
		r := run(t, args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("%s: exit %d stdout %q stderr %q, want %q", name, r.code, r.stdout, r.stderr, c.want)
		}
	}
}

// TestMCPTokenFlagsApply: the policy each combination makes; a token flag
// alone counts with the estimate; --tokenizer alone only adds the token count to
// notices.
func TestMCPTokenFlagsApply(t *testing.T) {
	for _, c := range []struct {
		f    mcpTokenFlags
		tk   string
		a, b int64
	}{
		{mcpTokenFlags{}, "", 0, 0},
		{mcpTokenFlags{threshold: 10}, "bytes/4", 10, 0},
		{mcpTokenFlags{result: 25000}, "bytes/4", 0, 25000},
		{mcpTokenFlags{result: 25000, tokenizer: "o200k_base"}, "o200k_base", 0, 25000},
		{mcpTokenFlags{threshold: 7, tokenizer: "estimate"}, "bytes/4", 7, 0},
		{mcpTokenFlags{tokenizer: "cl100k_base"}, "cl100k_base", 0, 0},
	} {
		p := hybridctx.Policy{InlineThreshold: 100}
		if err := c.f.apply(&p); err != nil {
			t.Fatal(err)
		}
		name := ""
		if p.Tokenizer != nil {
			name = p.Tokenizer.Name()
		}
		if name != c.tk || p.ThresholdTokens != c.a || p.ResultThresholdTokens != c.b || p.Validate() != nil {
			t.Errorf("%+v: %s %d %d (%v)", c.f, name, p.ThresholdTokens, p.ResultThresholdTokens, p.Validate())
		}
	}
}

// resultText is what a client sees of a result: its content and
// structured content as JSON.
func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMCPResultThresholdTokens: with --result-threshold-tokens 25000 (the
// most Claude Code accepts by default) every result reaches the client
// under 25,000 tokens, estimated and counted with o200k_base: 2,000 blocks
// of 4 KB, one 2 MB block, blocks each under --threshold but together
// over, many tiny blocks, one block under --threshold bytes but over the
// token bound.
// --threshold-tokens stores a block within --threshold bytes that is over
// its token bound, and keeps one within both.
func TestMCPResultThresholdTokens(t *testing.T) {
	skipUnlessLong(t)
	bin := mcpServerBin(t)
	o200k, err := bpe.New(bpe.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{
		// Byte bounds far above the token bound: the token bound governs.
		{"--threshold", "1000000", "--result-threshold", "10000000", "--tokenizer", "estimate"},
		{"--threshold", "1000000", "--result-threshold", "10000000", "--tokenizer", "o200k_base"},
		// The default threshold: the 2 MB block is streamed into the
		// workspace as it arrives.
		{"--tokenizer", "o200k_base"},
	} {
		tk := strings.Join(flags, " ")
		args := append(append([]string{"mcp", "--workspace", "mem://", "--result-threshold-tokens", "25000"}, flags...), "--", bin)
		r := startMCP(t, nil, args...)
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"blocks", map[string]any{"n": 2000, "size": 4000}},
			{"cat", map[string]any{"size": 2 << 20}},
			{"blocks", map[string]any{"n": 30, "size": 15000}},
			{"blocks", map[string]any{"n": 3000, "size": 40}},
			{"blocks", map[string]any{"n": 20, "size": 4000}},
			{"cat", map[string]any{"size": 500000}},
		} {
			res := r.call(t, c.tool, c.args)
			sent := resultText(t, res)
			est, exact := hybridctx.EstimateTokens{}.CountTokens(sent), o200k.CountTokens(sent)
			if est >= 25000 || exact >= 25000 || res.IsError {
				t.Errorf("%s: %s %v: %d bytes, ≈%d tokens (o200k_base %d) reach the client", tk, c.tool, c.args, len(sent), est, exact)
			}
			if c.tool == "cat" && !strings.Contains(firstText(res), " tokens, ") {
				t.Errorf("%s: the notice has no token count: %q", tk, firstText(res))
			}
			t.Logf("%s: %s %v: %d bytes, ≈%d tokens (o200k_base %d)", tk, c.tool, c.args, len(sent), est, exact)
		}
		if code := r.stop(t); code != ExitOK {
			t.Fatalf("exit %d: %s", code, r.stderr.String())
		}
	}

	r := startMCP(t, nil, "mcp", "--workspace", "mem://", "--threshold", "100000", "--threshold-tokens", "1000", "--", bin)
	defer r.stop(t)
	stored := r.call(t, "cat", map[string]any{"size": 4004}) // 1,001 estimated tokens
	if text := firstText(stored); !strings.HasPrefix(text, "artifact://sha256/") || !strings.Contains(text, "4004 bytes, ≈1001 tokens, ") {
		t.Errorf("over the token bound: %.200q", text)
	}
	if text := firstText(r.call(t, "cat", map[string]any{"size": 4000})); len(text) != 4000 {
		t.Errorf("within both bounds: %d bytes, %.80q", len(text), text)
	}
}
