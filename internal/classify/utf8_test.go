package classify

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// utf8Probe are the bytes that matter to UTF-8 validity: ASCII, the
// bounds of each continuation range the lead bytes allow, and each kind of
// lead byte, valid and not.
var utf8Probe = []byte{0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
	0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF}

// TestValidUTF8MatchesStdlib: the vector check agrees with utf8.Valid on
// every sequence of up to four probe bytes (every byte as the first one),
// placed before, across and after each block boundary and at the end of
// the input.
func TestValidUTF8MatchesStdlib(t *testing.T) {
	if !hasVectorUTF8 {
		t.Skip("no vector path on this machine")
	}
	buf := bytes.Repeat([]byte{'a'}, 100)
	n := 0
	check := func(seq []byte) {
		for _, total := range []int{35, 64} {
			for _, pos := range []int{0, 29, 30, 31, 32, total - 4, total - 3, total - 2, total - 1} {
				if pos < 0 || pos >= total {
					continue
				}
				in := buf[:total]
				copy(in[pos:], seq)
				if got, want := validUTF8(in), utf8.Valid(in); got != want {
					t.Fatalf("% x at %d of %d bytes: %v, want %v", seq, pos, total, got, want)
				}
				n++
				copy(in[pos:], "aaaa")
			}
		}
	}
	var seq [4]byte
	for first := range 256 {
		seq[0] = byte(first)
		check(seq[:1])
		for _, b := range utf8Probe {
			seq[1] = b
			check(seq[:2])
			if first < 0xC0 {
				continue
			}
			for _, c := range utf8Probe {
				seq[2] = c
				check(seq[:3])
				if first < 0xE0 || b < 0x80 || b > 0xBF {
					continue
				}
				for _, d := range utf8Probe {
					seq[3] = d
					check(seq[:4])
				}
			}
		}
	}
	if n < 100000 {
		t.Fatalf("only %d cases", n)
	}
}

// TestValidUTF8Corpora: the vector check agrees with utf8.Valid on the
// benchmark corpora, whole and cut at every length near a block boundary,
// with the portable path as well.
func TestValidUTF8Corpora(t *testing.T) {
	for _, body := range [][]byte{benchText(10000), benchJSON(10000), benchBinary(10000), bytes.Repeat([]byte("🙂"), 2500)} {
		for _, n := range []int{0, 1, 31, 32, 33, 63, 64, 65, 4095, 4096, 4097, len(body)} {
			if n > len(body) {
				continue
			}
			p := body[:n]
			if got, want := validUTF8(p), utf8.Valid(p); got != want {
				t.Fatalf("%q...: %v, want %v", p[:min(n, 20)], got, want)
			}
			if got, want := validUTF8Go(p), utf8.Valid(p); got != want {
				t.Fatalf("portable %q...: %v, want %v", p[:min(n, 20)], got, want)
			}
		}
	}
}

// FuzzValidUTF8: the vector check agrees with utf8.Valid on any input, at
// any alignment to the blocks.
func FuzzValidUTF8(f *testing.F) {
	for _, s := range []string{"", "a", "é", "🙂🙂🙂🙂🙂🙂🙂🙂🙂", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe0\x80\x80",
		string(bytes.Repeat([]byte("résumé ✓ "), 10)), string(bytes.Repeat([]byte{0xC3}, 40))} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(31))
	}
	f.Fuzz(func(t *testing.T, p []byte, shift uint8) {
		in := append(bytes.Repeat([]byte{' '}, int(shift%64)), p...)
		if got, want := validUTF8(in), utf8.Valid(in); got != want {
			t.Fatalf("%q shifted %d: %v, want %v", p, shift%64, got, want)
		}
	})
}

// BenchmarkValidUTF8: the vector check and utf8.Valid on the text corpus
// (non-ASCII words among ASCII ones) and on ASCII.
func BenchmarkValidUTF8(b *testing.B) {
	for _, c := range []struct {
		name string
		p    []byte
	}{{"text", benchText(32 << 10)}, {"ascii", bytes.Repeat([]byte("plain ascii log line\n"), 1600)}} {
		b.Run(c.name+"/vector", func(b *testing.B) {
			b.SetBytes(int64(len(c.p)))
			for b.Loop() {
				if !validUTF8(c.p) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(c.name+"/stdlib", func(b *testing.B) {
			b.SetBytes(int64(len(c.p)))
			for b.Loop() {
				if !utf8.Valid(c.p) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
