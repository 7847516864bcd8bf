package bpe

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer: each encoding's split pattern, scanned by hand. The
// patterns (docs/history.md, "Tokens") are, for cl100k_base,
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// and for o200k_base
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// matched as a backtracking engine does: the first alternative that
// matches wins, not the longest. The scanners follow the reference
// encoder's engine where it differs from textbook regex semantics:
//   - \s is unicode.IsSpace, and the categories are Go's unicode tables;
//   - (?i) lets 's also be 'ſ (U+017F), and nothing else beyond ASCII;
//   - DEL (U+007F) is in neither [^\r\n\p{L}\p{N}] nor [^\s\p{L}\p{N}]
//     (the engine's ASCII table leaves it out), so no alternative matches
//     it: it is skipped, counts no token, and ends the piece before it;
//   - in \s*[\r\n]+, when the greedy \s* must give characters back, it
//     stops at the first \r or \n of the run, not the last.
// Each scanner returns where the piece starting at p ends; text is valid
// UTF-8 (invalid bytes were replaced by U+FFFD before, as the reference
// does), p < len(text) and text[p] is not DEL.

// Character classes, as bits.
const (
	cL  = 1 << iota // \p{L}
	cN              // \p{N}
	cS              // \s
	cU              // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cW              // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cNL             // \r or \n
	cX              // DEL (U+007F): in no set of either pattern, see below
)

// classes holds the class bits of every rune of the Basic Multilingual
// Plane, built once.
var (
	classesOnce sync.Once
	classes     *[1 << 16]uint8
)

func buildClasses() {
	var t [1 << 16]uint8
	for r := range rune(len(t)) {
		t[r] = classify(r)
	}
	classes = &t
}

func classify(r rune) uint8 {
	var k uint8
	if unicode.IsLetter(r) {
		k |= cL
	}
	if unicode.IsNumber(r) {
		k |= cN
	}
	if unicode.IsSpace(r) {
		k |= cS
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		k |= cU
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		k |= cW
	}
	if r == '\r' || r == '\n' {
		k |= cNL
	}
	if r == 0x7f {
		k |= cX
	}
	return k
}

// ascii holds the classes of the ASCII characters.
var ascii = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = classify(r)
	}
	return t
}()

// at returns the class and width of the rune at text[i].
func at(text string, i int) (uint8, int) {
	c := text[i]
	if c < utf8.RuneSelf {
		return ascii[c], 1
	}
	r, w := utf8.DecodeRuneInString(text[i:])
	if r < 1<<16 {
		return classes[r], w
	}
	return classify(r), w
}

// isPrefix reports [^\r\n\p{L}\p{N}].
func isPrefix(k uint8) bool { return k&(cL|cN|cNL|cX) == 0 }

// isOther reports [^\s\p{L}\p{N}].
func isOther(k uint8) bool { return k&(cL|cN|cS|cX) == 0 }

// run returns the end of the run of runes from i whose class has any of
// the bits of want.
func run(text string, i int, want uint8) int {
	for i < len(text) {
		if c := text[i]; c < utf8.RuneSelf {
			if ascii[c]&want == 0 {
				break
			}
			i++
			continue
		}
		k, w := at(text, i)
		if k&want == 0 {
			break
		}
		i += w
	}
	return i
}

// contraction returns the length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or 0.
func contraction(text string, i int) int {
	if i+1 >= len(text) || text[i] != '\'' {
		return 0
	}
	switch text[i+1] {
	case 's', 'S', 't', 'T', 'm', 'M', 'd', 'D':
		return 2
	case 'r', 'R', 'v', 'V':
		if i+2 < len(text) && text[i+2]|0x20 == 'e' {
			return 3
		}
	case 'l', 'L':
		if i+2 < len(text) && text[i+2]|0x20 == 'l' {
			return 3
		}
	case 0xC5: // ſ is C5 BF
		if i+2 < len(text) && text[i+2] == 0xBF {
			return 3
		}
	}
	return 0
}

// spaces ends a piece at a white-space character: \s*[\r\n]+|\s+(?!\S)|\s+.
func spaces(text string, p, w int) int {
	e := p
	for e < len(text) {
		k, kw := at(text, e)
		if k&cS == 0 {
			break
		}
		if k&cNL != 0 {
			// The piece ends after this line break's run; the rest of
			// the white space is not read (a run of many line breaks
			// and spaces stays linear).
			for e < len(text) && (text[e] == '\r' || text[e] == '\n') {
				e++
			}
			return e
		}
		e += kw
	}
	if e == len(text) || e-p == w {
		return e
	}
	// Give back the last white-space character (the look-ahead).
	_, lw := utf8.DecodeLastRuneInString(text[:e])
	return e - lw
}

// nextCl100k returns the end of the cl100k_base piece starting at p.
func nextCl100k(text string, p int) int {
	k, w := at(text, p)
	if n := contraction(text, p); n > 0 {
		return p + n
	}
	if k&cL != 0 {
		return run(text, p+w, cL)
	}
	if isPrefix(k) && p+w < len(text) {
		if k2, w2 := at(text, p+w); k2&cL != 0 {
			return run(text, p+w+w2, cL)
		}
	}
	return noLetter(text, p, k, w, false)
}

// upperRun is the run of [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] from q: it ends at
// u, and lastW is where its last character that is also in
// [\p{Ll}\p{Lm}\p{Lo}\p{M}] starts, or -1.
func upperRun(text string, q int) (u, lastW int) {
	u, lastW = q, -1
	for u < len(text) {
		k, w := at(text, u)
		if k&cU == 0 {
			break
		}
		if k&cW != 0 {
			lastW = u
		}
		u += w
	}
	return u, lastW
}

// o200kLower matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// at q, whose upper run ends at u: the run gives characters back until one
// of its own (Lm, Lo or M, the last one, lastW) can start the lower run.
// It returns the end, or -1.
func o200kLower(text string, u, lastW int) int {
	if u < len(text) && classAt(text, u)&cW != 0 {
		return run(text, u, cW)
	}
	if lastW >= 0 {
		return run(text, lastW, cW)
	}
	return -1
}

// nextO200k returns the end of the o200k_base piece starting at p.
func nextO200k(text string, p int) int {
	if e := asciiWordO200k(text, p); e >= 0 {
		return e
	}
	k, w := at(text, p)
	// The letter alternatives need a letter or mark at p, or after a
	// prefix character; they are tried in the pattern's order: lower with
	// the prefix, lower without, upper with, upper without.
	pre := isPrefix(k) && p+w < len(text) && classAt(text, p+w)&(cU|cW) != 0
	if pre || k&(cU|cW) != 0 {
		u0, w0 := upperRun(text, p)
		u1, w1 := -1, -1
		if pre {
			u1, w1 = upperRun(text, p+w)
			if e := o200kLower(text, u1, w1); e >= 0 {
				return e + contraction(text, e)
			}
		}
		if e := o200kLower(text, u0, w0); e >= 0 {
			return e + contraction(text, e)
		}
		if pre && u1 > p+w {
			e := run(text, u1, cW)
			return e + contraction(text, e)
		}
		if u0 > p {
			e := run(text, u0, cW)
			return e + contraction(text, e)
		}
	}
	return noLetter(text, p, k, w, true)
}

// noLetter ends a piece that no letter alternative took, k and w being
// the class and width of its first character: \p{N}{1,3}, else
// " ?[^\s\p{L}\p{N}]+" and the line breaks after it (and, with slashes as
// in o200k_base, the slashes), else white space.
func noLetter(text string, p int, k uint8, w int, slashes bool) int {
	if k&cN != 0 {
		e := p + w
		for range 2 {
			if e >= len(text) {
				break
			}
			k2, w2 := at(text, e)
			if k2&cN == 0 {
				break
			}
			e += w2
		}
		return e
	}
	q := p
	if text[p] == ' ' {
		q++
	}
	if q < len(text) {
		if k2, w2 := at(text, q); isOther(k2) {
			e := q + w2
			for e < len(text) {
				k3, w3 := at(text, e)
				if !isOther(k3) {
					break
				}
				e += w3
			}
			for e < len(text) && (text[e] == '\r' || text[e] == '\n' || slashes && text[e] == '/') {
				e++
			}
			return e
		}
	}
	return spaces(text, p, w)
}

// asciiWordO200k is nextO200k's first alternative for the commonest
// pieces, an ASCII word after an optional ASCII prefix character: it
// returns their end, or -1 to leave the piece to the general scan.
func asciiWordO200k(text string, p int) int {
	q := p
	if c := text[p]; c >= utf8.RuneSelf {
		return -1
	} else if isPrefix(ascii[c]) {
		q++
	}
	u := q
	for u < len(text) && text[u]-'A' < 26 {
		u++
	}
	if u >= len(text) || text[u]-'a' >= 26 {
		return -1
	}
	e := run(text, u+1, cW)
	return e + contraction(text, e)
}

// classAt returns the class of the rune at text[i].
func classAt(text string, i int) uint8 {
	k, _ := at(text, i)
	return k
}
