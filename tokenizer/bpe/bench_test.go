package bpe

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/internal/cputime"
)

// corpus returns size bytes of one kind of text, cut back to a UTF-8
// boundary: prose (the repository's docs), code (this package's sources),
// JSON records, log lines, or base64 without line breaks.
func corpus(tb testing.TB, kind string, size int) string {
	tb.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	var b strings.Builder
	switch kind {
	case "prose", "code":
		pat := "../../docs/*.md"
		if kind == "code" {
			pat = "*.go"
		}
		files, _ := filepath.Glob(pat)
		if len(files) == 0 {
			tb.Fatalf("no %s files", pat)
		}
		for b.Len() < size {
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					tb.Fatal(err)
				}
				b.Write(data)
			}
		}
	case "json":
		type rec struct {
			ID     int      `json:"id"`
			Name   string   `json:"name"`
			Email  string   `json:"email"`
			Score  float64  `json:"score"`
			Active bool     `json:"active"`
			Tags   []string `json:"tags"`
		}
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		for i := 0; b.Len() < size; i++ {
			_ = enc.Encode(rec{i, fmt.Sprintf("user %d", r.IntN(1e6)), fmt.Sprintf("u%d@example.com", i), r.Float64() * 100, i%3 == 0, []string{"alpha", "beta"}[:1+i%2]})
		}
	case "json-min":
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, `{"id":%d,"name":"user%d","v":[%d,%d,%d],"ok":%t},`, i, r.IntN(1e6), r.IntN(100), r.IntN(1e4), r.IntN(1e7), i%2 == 0)
		}
	case "logs":
		levels := []string{"INFO", "WARN", "DEBUG", "ERROR"}
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, "2026-12-04T22:%02d:%02d.%03dZ %s http: request method=GET path=/api/v1/items/%d status=%d bytes=%d took=%dms trace=%016x\n",
				i/60%60, i%60, r.IntN(1000), levels[r.IntN(4)], r.IntN(1e5), []int{200, 404, 500}[r.IntN(3)], r.IntN(1e6), r.IntN(900), r.Uint64())
		}
	case "base64":
		raw := make([]byte, size)
		for i := range raw {
			raw[i] = byte(r.Uint32())
		}
		b.WriteString(base64.StdEncoding.EncodeToString(raw))
	default:
		tb.Fatalf("kind %q", kind)
	}
	s := b.String()[:size]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
		s = s[:len(s)-1]
	}
	return strings.ToValidUTF8(s, "")
}

var benchKinds = []string{"prose", "code", "json", "logs", "base64"}

var benchSizes = []struct {
	name string
	n    int
}{{"4KiB", 4 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}

// BenchmarkCount counts each kind and size of text with this package and
// with the reference encoder, in the same run.
func BenchmarkCount(b *testing.B) {
	for _, name := range []string{O200kBase, Cl100kBase} {
		tk, _ := New(name)
		ref := reference(b, name)
		for _, kind := range benchKinds {
			for _, sz := range benchSizes {
				text := corpus(b, kind, sz.n)
				tk.CountTokens(text) // load the vocabulary outside the timing
				b.Run(fmt.Sprintf("%s/%s/%s/bpe", name, kind, sz.name), func(b *testing.B) {
					b.SetBytes(int64(len(text)))
					b.ReportAllocs()
					c := startCPU()
					for b.Loop() {
						tk.CountTokens(text)
					}
					c.report(b, len(text))
				})
				b.Run(fmt.Sprintf("%s/%s/%s/reference", name, kind, sz.name), func(b *testing.B) {
					b.SetBytes(int64(len(text)))
					b.ReportAllocs()
					c := startCPU()
					for b.Loop() {
						_, _ = ref.Count(text)
					}
					c.report(b, len(text))
				})
			}
		}
	}
}

// BenchmarkWorstCase counts 1, 4 and 16 MiB of one character (one piece
// of the split), of minified JSON and of base64 without spaces: the time
// per byte should stay flat as the size grows.
func BenchmarkWorstCase(b *testing.B) {
	tk, _ := New(O200kBase)
	tk.CountTokens("x")
	for _, kind := range []string{"a", "space", "json-min", "base64"} {
		for _, mib := range []int{1, 4, 16} {
			var text string
			switch kind {
			case "a":
				text = strings.Repeat("a", mib<<20)
			case "space":
				text = strings.Repeat(" ", mib<<20)
			default:
				text = corpus(b, kind, mib<<20)
			}
			b.Run(fmt.Sprintf("%s/%dMiB/bpe", kind, mib), func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				c := startCPU()
				for b.Loop() {
					tk.CountTokens(text)
				}
				c.report(b, len(text))
			})
			if mib > 1 {
				continue // the reference takes seconds a MiB
			}
			b.Run(fmt.Sprintf("%s/%dMiB/reference", kind, mib), func(b *testing.B) {
				ref := reference(b, O200kBase)
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				c := startCPU()
				for b.Loop() {
					_, _ = ref.Count(text)
				}
				c.report(b, len(text))
			})
		}
	}
}

// cpuClock measures the process's CPU time, which on a shared machine
// says more than the wall clock: with -cpu 1 it is the benchmark's own.
type cpuClock struct{ start time.Duration }

func startCPU() cpuClock { return cpuClock{cputime.Used()} }

// report adds cpu-ns/op and cpu-MB/s.
func (c cpuClock) report(b *testing.B, size int) {
	d := cputime.Used() - c.start
	if b.N == 0 || d <= 0 {
		return
	}
	per := float64(d.Nanoseconds()) / float64(b.N)
	b.ReportMetric(per, "cpu-ns/op")
	b.ReportMetric(float64(size)/per*1e3, "cpu-MB/s")
}

// TestCorporaMatchReference checks the benchmark corpora count as the
// reference counts them, at 64 KiB.
func TestCorporaMatchReference(t *testing.T) {
	for _, kind := range append(benchKinds, "json-min") {
		checkSame(t, corpus(t, kind, 64<<10))
	}
	checkSame(t, strings.Repeat("a", 100_000))
	checkSame(t, strings.Repeat(" ", 100_000))
}

// BenchmarkLoad is the one-time cost of loading each vocabulary.
func BenchmarkLoad(b *testing.B) {
	for _, name := range []string{O200kBase, Cl100kBase} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := loadVocab(*encodings[name].data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLinearWhiteSpace: a long run of spaces and line breaks is counted
// in time linear in its length (it was quadratic: each piece read the
// rest of the run), and as the reference counts it.
func TestLinearWhiteSpace(t *testing.T) {
	checkSame(t, strings.Repeat(" \n", 2000)+"x")
	tk, _ := New(O200kBase)
	text := strings.Repeat(" \n", 4<<20)
	if n := tk.CountTokens(text); n != 4<<20 {
		t.Fatalf("%d tokens", n)
	}
}

// BenchmarkCountInvalid counts 64 KiB of text that is not valid UTF-8
// (Latin-1 prose: each byte over 0x7F counts as U+FFFD).
func BenchmarkCountInvalid(b *testing.B) {
	tk, _ := New(O200kBase)
	text := []byte(corpus(b, "prose", 64<<10))
	for i := range text {
		if i%50 == 7 {
			text[i] = 0xE9 // é in Latin-1
		}
	}
	s := string(text)
	tk.CountTokens(s)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	c := startCPU()
	for b.Loop() {
		tk.CountTokens(s)
	}
	c.report(b, len(s))
}
