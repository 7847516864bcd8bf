package classify

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// benchText returns n bytes of UTF-8 prose in lines.
func benchText(n int) []byte {
	words := []string{"the", "tool", "returned", "résumé", "naïve", "日本語", "🙂", "output", "of", "grep", "-rn", "main.go:42:", "error", "ok"}
	r := rand.New(rand.NewPCG(1, 1))
	b := make([]byte, 0, n+64)
	for len(b) < n {
		b = append(b, words[r.IntN(len(words))]...)
		if r.IntN(10) == 0 {
			b = append(b, '\n')
		} else {
			b = append(b, ' ')
		}
	}
	// Trim to n without cutting a rune.
	for len(b) > n || b[len(b)-1]&0xC0 == 0x80 || b[len(b)-1] >= 0xC0 {
		b = b[:len(b)-1]
	}
	return b
}

// benchJSON returns an indented JSON array of about n bytes.
func benchJSON(n int) []byte {
	r := rand.New(rand.NewPCG(2, 2))
	b := make([]byte, 0, n+512)
	b = append(b, "[\n"...)
	for i := 0; len(b) < n-300; i++ {
		if i > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, "  {\n    \"id\": "...)
		b = strconv.AppendInt(b, int64(r.IntN(1e6)), 10)
		b = append(b, ",\n    \"name\": "...)
		b = strconv.AppendQuote(b, strings.Repeat("file_é", 1+r.IntN(6)))
		b = append(b, ",\n    \"path\": \"/usr/src/project/internal/pkg/file.go\",\n    \"score\": "...)
		b = strconv.AppendFloat(b, r.NormFloat64()*1e3, 'g', -1, 64)
		b = append(b, ",\n    \"ok\": true,\n    \"tags\": [\"a\", \"bb\", null, false],\n    \"note\": \"line\\nwith \\\"escapes\\\" \\u00e9\"\n  }"...)
	}
	return append(b, "\n]\n"...)
}

// benchBinary returns n random bytes.
func benchBinary(n int) []byte {
	r := rand.New(rand.NewPCG(3, 3))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// BenchmarkClassify measures throughput over 1 MiB inputs written in
// 32 KiB chunks, the size io.Copy uses.
func BenchmarkClassify(b *testing.B) {
	const size = 1 << 20
	for _, bc := range []struct {
		name string
		data []byte
		want Kind
	}{
		{"text", benchText(size), Text},
		{"json", benchJSON(size), JSON},
		{"binary", benchBinary(size), Binary},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var c Classifier
			b.SetBytes(int64(len(bc.data)))
			b.ReportAllocs()
			for b.Loop() {
				c.Reset()
				for p := bc.data; len(p) > 0; {
					k := min(len(p), 32<<10)
					c.Write(p[:k])
					p = p[k:]
				}
			}
			if got := c.Kind(); got != bc.want {
				b.Fatalf("Kind = %v, want %v", got, bc.want)
			}
		})
	}
}
