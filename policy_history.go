package hybridctx

import (
	"fmt"
	"math"
	mbits "math/bits"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// HistoryPolicy bounds a whole conversation's tool content (see
// docs/history.md). The zero value turns the history budget off.
type HistoryPolicy struct {
	// Budget is the tool-message content a history may hold: bytes, or
	// tokens when the policy has a Tokenizer. 0 means no budget.
	Budget int64
	// LowWater is what a compaction step brings the tool content down to
	// once it went over Budget. 0 means Budget/2; it must be <= Budget.
	LowWater int64
	// KeepRecent results, the most recent ones, are never masked. 0 means
	// DefaultKeepRecent; a negative value keeps none.
	KeepRecent int
	// ExcludeTools names the tools whose results are never masked.
	ExcludeTools []string
}

// DefaultKeepRecent is HistoryPolicy.KeepRecent when it is zero.
const DefaultKeepRecent = 3

// Enabled reports whether the policy sets a budget.
func (h HistoryPolicy) Enabled() bool { return h.Budget > 0 }

// LowWaterMark returns LowWater, or Budget/2 when it is zero.
func (h HistoryPolicy) LowWaterMark() int64 {
	if h.LowWater > 0 {
		return h.LowWater
	}
	return h.Budget / 2
}

// Recent returns how many recent results are never masked: KeepRecent, 3
// when it is zero, 0 when it is negative.
func (h HistoryPolicy) Recent() int {
	switch {
	case h.KeepRecent == 0:
		return DefaultKeepRecent
	case h.KeepRecent < 0:
		return 0
	}
	return h.KeepRecent
}

// excluded reports whether tool's results are never masked.
func (h HistoryPolicy) excluded(tool string) bool {
	for _, t := range h.ExcludeTools {
		if t == tool {
			return true
		}
	}
	return false
}

// validate checks the history fields of a policy.
func (h HistoryPolicy) validate() error {
	switch {
	case h.Budget < 0 || h.LowWater < 0:
		return fmt.Errorf("%w: history budget and low water must be >= 0", ErrInvalidPolicy)
	case h.Budget == 0 && (h.LowWater != 0 || h.KeepRecent != 0 || len(h.ExcludeTools) != 0):
		return fmt.Errorf("%w: history settings without a history budget", ErrInvalidPolicy)
	case h.LowWater > h.Budget:
		return fmt.Errorf("%w: history low water %d above the budget %d", ErrInvalidPolicy, h.LowWater, h.Budget)
	}
	for _, t := range h.ExcludeTools {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("%w: an excluded tool needs a name", ErrInvalidPolicy)
		}
	}
	return nil
}

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
		s = unsafe.String(unsafe.SliceData(b), len(b)) // read only, not kept
	}
	return p.Tokenizer.CountTokens(s) > p.ThresholdTokens
}

// NoticeTokenPrefix is the most bytes of a body a notice's token count
// reads (EstimateTokens reads none: its count is the size's): a body up to
// this size is counted whole, a larger one from its first NoticeTokenPrefix
// bytes (cut back to a UTF-8 boundary), scaled by its size, so a notice
// costs at most one 4 KiB count whatever the body's size. BPE counting is
// slow (about 0.5 µs a byte with o200k_base on the machine measured), so
// the prefix is small: see docs/history.md, "Tokens", for the figures.
const NoticeTokenPrefix = 4 << 10

// noticeTokens returns the "≈N tokens" a notice shows for a body of size
// bytes that begins with head (the whole body when it is that short, and
// at least its first NoticeTokenPrefix bytes otherwise), or 0 when the
// policy has no Tokenizer. It depends only on the body and the policy.
func (p Policy) noticeTokens(head []byte, size int64) int64 {
	if p.Tokenizer == nil || size <= 0 {
		return 0
	}
	if _, ok := p.Tokenizer.(EstimateTokens); ok {
		return (size + 3) / 4 // exact from the size alone, whatever the size
	}
	if size <= NoticeTokenPrefix && int64(len(head)) >= size {
		return p.Tokenizer.CountTokens(unsafe.String(unsafe.SliceData(head), int(size)))
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
	c := p.Tokenizer.CountTokens(unsafe.String(unsafe.SliceData(head), cut))
	// c × size / cut, rounded up, without overflow: c ≤ cut < 2^17.
	hi, lo := mbits.Mul64(uint64(c), uint64(size))
	q, r := mbits.Div64(hi, lo, uint64(cut))
	if r > 0 {
		q++
	}
	return int64(min(q, math.MaxInt64))
}
