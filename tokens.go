package hybridctx

import (
	"fmt"
	"math"
	mbits "math/bits"
	"unicode/utf8"
	"unsafe"
)

// Tokens (docs/history.md, "Tokens"): the Tokenizer a policy counts with,
// the threshold's token check, and the token count a stored notice shows.
// Diagnostics and events stay in bytes.

// Tokenizer counts the tokens a model would see for some text. A policy
// with a Tokenizer may bound results and the history in tokens as well as
// bytes; diagnostics and events stay in bytes. Implementations must be safe
// for concurrent use and deterministic. Built in: EstimateTokens here, and
// exact BPE counts in the package tokenizer/bpe.
type Tokenizer interface {
	// CountTokens returns the number of tokens of text, at most len(text)
	// (a token stands for at least one byte): the token bounds rely on it
	// to skip counting a text no longer than the bound.
	CountTokens(text string) int64
	// Name identifies the tokenizer in reports ("bytes/4", "o200k_base").
	Name() string
}

// EstimateTokens is the Tokenizer that estimates one token per four bytes,
// rounded up: no vocabulary, no cost.
type EstimateTokens struct{}

// CountTokens returns ceil(len(text)/4).
func (EstimateTokens) CountTokens(text string) int64 { return (int64(len(text)) + 3) / 4 }

// Name returns "bytes/4".
func (EstimateTokens) Name() string { return "bytes/4" }

// tokens counts text with the policy's tokenizer, or estimates it.
func (p Policy) tokens(text string) int64 {
	if p.Tokenizer != nil {
		return p.Tokenizer.CountTokens(text)
	}
	return EstimateTokens{}.CountTokens(text)
}

// MaxTokenCountBytes is the largest byte threshold (InlineThreshold, and
// every ToolThresholds value) a policy may pair with ThresholdTokens under
// a Tokenizer other than EstimateTokens. A token threshold is exact: every
// result above the token bound in bytes and within the byte threshold is
// counted whole (no prefix of a text proves its whole count for a tokenizer
// known only by its interface), so the byte threshold bounds what one
// decision may count. See docs/history.md, "Tokens".
const MaxTokenCountBytes = 1 << 20

// validateTokenCount refuses a token threshold whose decisions would count
// texts larger than MaxTokenCountBytes.
func (p Policy) validateTokenCount() error {
	if p.ThresholdTokens <= 0 || p.Tokenizer == nil {
		return nil
	}
	if _, ok := p.Tokenizer.(EstimateTokens); ok {
		return nil // counted from the length alone
	}
	largest := p.InlineThreshold
	for _, n := range p.ToolThresholds {
		largest = max(largest, n)
	}
	if largest > MaxTokenCountBytes {
		return fmt.Errorf("%w: a token threshold under %s counts each result up to the byte threshold whole: the byte threshold must be at most %d bytes, not %d",
			ErrInvalidPolicy, p.Tokenizer.Name(), MaxTokenCountBytes, largest)
	}
	return nil
}

// overTokens reports whether a result within the byte threshold is over the
// policy's token bound (ThresholdTokens). b is the result's bytes, or s when
// isStr.
func (p Policy) overTokens(b []byte, s string, isStr bool) bool {
	if p.ThresholdTokens <= 0 || p.Tokenizer == nil {
		return false
	}
	n := len(b)
	if isStr {
		n = len(s)
	}
	if int64(n) <= p.ThresholdTokens {
		return false // never more tokens than bytes: no count needed
	}
	if !isStr {
		// A read-only view of b, not a copy: the count only reads it and
		// keeps nothing. A copy cost 10% more CPU per decision on a 16 KiB
		// []byte result counted under o200k_base (BENCHMARKS.md, "Speed
		// code and its figures").
		s = unsafe.String(unsafe.SliceData(b), len(b))
	}
	return p.Tokenizer.CountTokens(s) > p.ThresholdTokens
}

// NoticeTokenWhole is the largest body a notice counts whole, exactly,
// with a Tokenizer other than EstimateTokens: its notice reads "<T>
// tokens". A larger body is counted from its first NoticeTokenPrefix
// bytes (cut back to a UTF-8 boundary) and scaled by its size, and its
// notice reads "≈<T> tokens", so a notice costs at most one 1 MiB count
// whatever the body's size. See docs/history.md, "Tokens", for the figures.
const NoticeTokenWhole = 1 << 20

// NoticeTokenPrefix is the most bytes of a body larger than
// NoticeTokenWhole a notice's token count reads.
const NoticeTokenPrefix = 4 << 10

// noticeHead is the most bytes of a body the notice's token count needs:
// the whole body up to NoticeTokenWhole, or none under EstimateTokens.
func (p Policy) noticeHead() int {
	if p.Tokenizer == nil {
		return 0
	}
	if _, ok := p.Tokenizer.(EstimateTokens); ok {
		return 0
	}
	return NoticeTokenWhole
}

// noticeExact reports whether a notice's token count of a body of size
// bytes is exact ("<T> tokens") rather than an estimate ("≈<T> tokens"):
// the body was counted whole, by a Tokenizer other than EstimateTokens.
func (p Policy) noticeExact(size int64) bool {
	return p.noticeHead() > 0 && size <= NoticeTokenWhole
}

// noticeTokens returns the tokens a notice shows for a body of size bytes
// that begins with head (the whole body when it is at most
// NoticeTokenWhole bytes, and at least its first NoticeTokenPrefix bytes
// otherwise), or 0 when the policy has no Tokenizer. It depends only on
// the body and the policy.
func (p Policy) noticeTokens(head []byte, size int64) int64 {
	if p.Tokenizer == nil || size <= 0 {
		return 0
	}
	if _, ok := p.Tokenizer.(EstimateTokens); ok {
		return (size + 3) / 4 // from the size alone, whatever the size
	}
	if size <= NoticeTokenWhole && int64(len(head)) >= size {
		return p.Tokenizer.CountTokens(string(head[:size]))
	}
	cut := min(len(head), NoticeTokenPrefix)
	for k := cut; k > cut-utf8.UTFMax && k > 0; k-- {
		if utf8.RuneStart(head[k-1]) { // the last rune starts at k-1
			if utf8.FullRune(head[k-1 : cut]) {
				break
			}
			cut = k - 1
			break
		}
	}
	if cut <= 0 {
		return (size + 3) / 4 // no head to count: the estimate
	}
	c := p.Tokenizer.CountTokens(string(head[:cut]))
	// c × size / cut, rounded up, without overflow: c ≤ cut < 2^17.
	hi, lo := mbits.Mul64(uint64(c), uint64(size))
	q, r := mbits.Div64(hi, lo, uint64(cut))
	if r > 0 {
		q++
	}
	return int64(min(q, math.MaxInt64))
}
