package bpe

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tiktoken-go/tokenizer"
)

// reference returns the reference encoder of an encoding.
func reference(t testing.TB, name string) tokenizer.Codec {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.Encoding(name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkSame fails unless every encoding counts text as the reference does.
func checkSame(t testing.TB, text string) {
	t.Helper()
	for _, name := range []string{O200kBase, Cl100kBase} {
		tk, _ := New(name)
		want, err := reference(t, name).Count(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := tk.CountTokens(text); got != int64(want) {
			t.Errorf("%s: %d tokens, reference %d, for %q", name, got, want, clip(text))
		}
	}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func TestDifferentialBasics(t *testing.T) {
	for _, s := range []string{
		"", "a", "hello world", "Hello, World! It's 2026.", "don't we'll they're I'VE he'D she'S 'll 'ſ 'Ll",
		"  \n \n  x", "\n \n x", "a  b", "a \t\n\r\n  b  ", "   ", "x\r\n\r\ny", "12345678901 1 22 333 4444",
		"café naïve résumé", "e\u0301\u0301 \u0301x", "日本語のテキスト", "مرحبا بالعالم", "👨‍👩‍👧 👍🏽",
		"\xff\xfe binary \xe2\x82", "func main() {\n\tfmt.Println(\"hi\")\n}\n", `{"a":[1,2,3],"b":{"c":null}}`,
		"HELLOWorld helloWORLD ªAAA AAAªbb ǅemo", "</div>\n/// comment\n//", "<|endoftext|>",
		"\x7f", "a\x7fb", " \x7f \x7f\x7f.", "\x7f\n\x7f",
		strings.Repeat("a", 1000), strings.Repeat(" ", 1000), strings.Repeat("=", 300) + "x",
	} {
		checkSame(t, s)
	}
}

// TestVocabMatchesReference: the embedded vocabularies hold the
// reference's tokens, rank for rank, and every token ranks as itself.
func TestVocabMatchesReference(t *testing.T) {
	for _, name := range []string{O200kBase, Cl100kBase} {
		tk, _ := New(name)
		tk.CountTokens("")
		v := tk.enc.v
		ref := reference(t, name)
		for r := range uint32(len(v.start)) {
			want, err := ref.Decode([]uint{uint(r)})
			if err != nil || v.token(r) != want || v.rank(want) != r {
				t.Fatalf("%s rank %d: %q, reference %q (%v), ranks as %d", name, r, v.token(r), want, err, v.rank(want))
			}
		}
		if _, err := ref.Decode([]uint{uint(len(v.start))}); err == nil {
			t.Errorf("%s: the reference has more than %d tokens", name, len(v.start))
		}
	}
}

// TestBadVocab: a corrupt vocabulary is refused, and a tokenizer whose
// vocabulary failed to load falls back to the estimate.
func TestBadVocab(t *testing.T) {
	good := cl100kData
	for _, bad := range []string{"", "BPEV2\n\x00\x00\x00\x00", good[:len(good)-1], good + "x", good[:10] + "\x00" + good[11:]} {
		if _, err := loadVocab(bad); !errors.Is(err, errBadVocab) {
			t.Errorf("%.12q…: %v", bad, err)
		}
	}
	broken := &encoding{data: new(string), next: nextCl100k}
	tk := &Tokenizer{name: "broken", enc: broken}
	if n := tk.CountTokens("12345678"); n != 2 {
		t.Errorf("fallback counted %d, want the estimate 2", n)
	}
}

// TestConcurrentCounts: goroutines counting different texts at once,
// sharing the piece cache, get the counts one goroutine gets.
func TestConcurrentCounts(t *testing.T) {
	g := newGen(3)
	texts := make([]string, 300)
	for i := range texts {
		texts[i] = g.text(50 + i)
	}
	for _, name := range []string{O200kBase, Cl100kBase} {
		tk, _ := New(name)
		want := make([]int64, len(texts))
		for i, s := range texts {
			want[i] = tk.CountTokens(s)
		}
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range texts {
					i := (j*7 + w*31) % len(texts)
					if got := tk.CountTokens(texts[i]); got != want[i] {
						t.Errorf("%s text %d: %d tokens, alone %d", name, i, got, want[i])
						return
					}
				}
			}()
		}
		wg.Wait()
	}
}
