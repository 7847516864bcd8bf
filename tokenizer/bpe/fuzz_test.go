package bpe

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// gen builds texts that stress the split patterns: every script, marks,
// emoji with joiners, digits of every kind and length, every white-space
// character, contractions in both cases, invalid UTF-8 and long runs.
type gen struct {
	r      *rand.Rand
	script [][]rune // sample runes of each script and category
}

func newGen(seed uint64) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	add := func(t *unicode.RangeTable) {
		var rs []rune
		for _, r16 := range t.R16 {
			for c := rune(r16.Lo); c <= rune(r16.Hi) && len(rs) < 400; c += rune(r16.Stride) {
				rs = append(rs, c)
			}
		}
		for _, r32 := range t.R32 {
			for c := rune(r32.Lo); c <= rune(r32.Hi) && len(rs) < 800; c += rune(r32.Stride) {
				rs = append(rs, c)
			}
		}
		if len(rs) > 0 {
			g.script = append(g.script, rs)
		}
	}
	for _, m := range []map[string]*unicode.RangeTable{unicode.Scripts, unicode.Categories} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			add(m[k])
		}
	}
	add(unicode.White_Space)
	return g
}

var fragments = []string{
	"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D", "'ſ", "'x", "'",
	" ", "  ", "\t", "\n", "\r\n", "\n\n", " \n ", "\u00a0", "\u3000", "\u2028", "\u0085", "\v\f",
	"\u200d", "👨\u200d👩\u200d👧", "🏳️\u200d🌈", "👍🏽", "e\u0301", "\u0301", "ǅ", "ᾈ", "ª", "ʰ",
	"0", "42", "123", "4567", "٣٤٥", "½", "Ⅻ", "①", "𝟘𝟙", "3.14159", "-1e10",
	"func f(x int) error {", "}\n", "if (a && b) { return; }", "#include <stdio.h>", "def f(self):", "SELECT * FROM t;",
	`{"key":"value","n":[1,2,3],"ok":true}`, "2026-12-04T22:05:19Z INFO request id=42 status=200 took=1.5ms\n",
	"QUJDRGVmZ2hpamtsbW5vcA==", "aGVsbG8gd29ybGQ+Lz8=", "//", "///", "/*", "*/", "://", "<|endoftext|>",
	"\xff", "\xfe", "\xe2\x82", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80",
	"Hello", "WORLD", "camelCase", "snake_case", "HTTPServer", "iPhone", "naïve", "ΑΒΓαβγ", "Привет", "שלום", "مرحبا",
	"日本語", "한국어", "ไทย", "हिन्दी", "ကမ္ဘာ",
}

func (g *gen) text(max int) string {
	var b strings.Builder
	for b.Len() < max {
		switch g.r.IntN(6) {
		case 0, 1:
			b.WriteString(fragments[g.r.IntN(len(fragments))])
		case 2:
			s := g.script[g.r.IntN(len(g.script))]
			for range 1 + g.r.IntN(6) {
				b.WriteRune(s[g.r.IntN(len(s))])
			}
		case 3:
			b.WriteByte(byte(g.r.IntN(128)))
		case 4:
			b.WriteByte(byte(g.r.IntN(256)))
		case 5: // a run
			f := fragments[g.r.IntN(len(fragments))]
			b.WriteString(strings.Repeat(f, 1+g.r.IntN(40)))
		}
	}
	return b.String()
}

func TestDifferentialRandom(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	g := newGen(1)
	for i := range n {
		checkSame(t, g.text(1+i%200))
		if t.Failed() {
			return
		}
	}
}

func TestDifferentialNumbersAndSpaces(t *testing.T) {
	spaces := []string{" ", "\t", "\n", "\r", "\u00a0", "\u3000", "\u0085", "\u2029"}
	for l := 1; l <= 24; l++ {
		checkSame(t, strings.Repeat("9", l)+" x"+strings.Repeat("٣", l))
		for _, a := range spaces {
			for _, b := range spaces {
				checkSame(t, "x"+strings.Repeat(a, l%5+1)+strings.Repeat(b, l%3+1)+"y"+a)
			}
		}
	}
}

func FuzzCount(f *testing.F) {
	for _, s := range fragments {
		f.Add(s)
	}
	g := newGen(2)
	for range 50 {
		f.Add(g.text(120))
	}
	f.Fuzz(func(t *testing.T, text string) {
		checkSame(t, text)
	})
}
