package classify

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// withBlocks sets hasBlocks for the duration of f (false: the scanner
// without the block path, as on machines without AVX2).
func withBlocks(on bool, f func()) {
	old := hasBlocks
	hasBlocks = on && old
	defer func() { hasBlocks = old }()
	f()
}

// TestBlockEvents compares blockEvents with blockEventsGo on random bytes
// drawn mostly from the classes the masks tell apart, batch after batch
// with the state they carry, and on every byte value at every position
// of a block.
func TestBlockEvents(t *testing.T) {
	if !hasBlocks {
		t.Skip("no vector blockEvents on this machine")
	}
	for _, avx512 := range []bool{true, false} {
		if avx512 && !hasAVX512 {
			t.Log("no AVX-512 on this machine")
			continue
		}
		t.Run(map[bool]string{true: "AVX-512", false: "AVX2"}[avx512], func(t *testing.T) {
			withAVX512(avx512, func() { testBlockEvents(t) })
		})
	}
}

// withAVX512 sets hasAVX512 for the duration of f (false: the AVX2
// blockEvents).
func withAVX512(on bool, f func()) {
	old := hasAVX512
	hasAVX512 = on && old
	defer func() { hasAVX512 = old }()
	f()
}

func testBlockEvents(t *testing.T) {
	alphabet := []byte(" \t\r\n\"\\{}[]:,\x00\x01\x1f\x20\x21\x7f\x80\xff\x5b\x5d\x7b\x7d\x3a\x2c\x1a\x3b\x5c\x09\x0a\x0d\x29\x2a\x2d\x0cab0123456789/:")
	check := func(what string, p []byte, n int, got, want *blockState) {
		t.Helper()
		var g, w eventBatch
		blockEvents(p, n, &g, got)
		blockEventsGo(p, n, &w, want)
		for k := range n {
			for x := range eventWords {
				if g[k][x] != w[k][x] {
					t.Fatalf("%s: block %d word %d: %064b, want %064b", what, k, x, g[k][x], w[k][x])
				}
			}
		}
		if *got != *want {
			t.Fatalf("%s: state %+v, want %+v", what, *got, *want)
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	for range 200 {
		var got, want blockState
		for batch := range 3 {
			n := 1 + r.IntN(batchBlocks)
			p := make([]byte, n<<6)
			// Mostly backslashes and quotes in some batches: long runs of
			// each cross blocks. Mostly UTF-8 pieces in others: whole
			// and cut runes, stray continuation and lead bytes.
			dense, text := r.IntN(3) == 0, r.IntN(3) == 0
			pieces := []string{"é", "ß", "测", "🙂", "\xc3", "\xa9", "\xc1\xbf", "\xdf\xbf", "\xe0\xa0", "a", " ", `"`}
			for i := 0; i < len(p); i++ {
				switch {
				case text && r.IntN(4) != 0:
					i += copy(p[i:], pieces[r.IntN(len(pieces))]) - 1
				case dense && r.IntN(2) == 0:
					p[i] = `\"`[r.IntN(2)]
				case r.IntN(4) == 0:
					p[i] = byte(r.Uint32())
				default:
					p[i] = alphabet[r.IntN(len(alphabet))]
				}
			}
			check("batch "+string(rune('0'+batch)), p, n, &got, &want)
		}
	}
	for v := range 256 {
		p := bytes.Repeat([]byte{byte(v)}, 64)
		for _, start := range []blockState{{}, {esc: 1}, {inStr: ^uint64(0)}, {scalar: 1}} {
			got, want := start, start
			check("byte "+strconv.Itoa(v), p, 1, &got, &want)
		}
	}
}

// TestEscaped compares escaped, applied block by block with its carry,
// with a byte-wise reading of backslash runs.
func TestEscaped(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for range 2000 {
		n := 1 + r.IntN(4)
		p := make([]byte, n<<6)
		density := 1 + r.IntN(4)
		for i := range p {
			if r.IntN(density+1) != 0 {
				p[i] = '\\'
			} else {
				p[i] = 'a'
			}
		}
		var want []bool
		esc := false
		for _, c := range p {
			want = append(want, esc)
			esc = !esc && c == '\\'
		}
		var carry uint64
		for k := range n {
			var b uint64
			for j, c := range p[k<<6 : (k+1)<<6] {
				if c == '\\' {
					b |= 1 << j
				}
			}
			got := escaped(b, &carry)
			for j := range 64 {
				if g := got>>j&1 != 0; g != want[k<<6+j] {
					t.Fatalf("%q: byte %d escaped = %v, want %v", p, k<<6+j, g, !g)
				}
			}
		}
	}
}

// blockDocs are JSON documents long enough for the block path, in the
// shapes it is tuned for.
func blockDocs() [][]byte {
	return [][]byte{benchAPI(1500), benchListing(1500), benchLogs(1500), benchJSON(1500)}
}

// TestBlockEdits puts, at every offset of each document, an edit that
// changes its validity or meaning at a block boundary or inside a block
// (escapes, control and non-ASCII bytes, broken numbers and literals,
// stray punctuation), and checks the verdict against the standard
// library, fed whole and in a few splits, with and without the block path.
func TestBlockEdits(t *testing.T) {
	edits := []string{
		`\`, `\\`, `\\\`, `"`, `\"`, `\\"`, `\u00e9`, `\u00g9`, `\ud800`, `\x`,
		"\x00", "\x1f", "\t", "\n", "\x7f", "\xc3\xa9", "\xff", "\xef\xbb\xbf",
		"\xc3", "\xa9", "\xc3\xa9\xa9", "\xc3\xc3\xa9", "\xe6\xc3\xa9", "\xe6\xb5\x8b", "\xc1\xbf", "\xf0\x9f\x99\x82",
		`,`, `:`, `{`, `}`, `[`, `]`, `,"k":1`, ` `, `0`, `-`, `01`, `-0`, `1e+`, `1.`, `.5`,
		`true`, `nul`, `x`,
	}
	r := rand.New(rand.NewPCG(9, 9))
	for d, doc := range blockDocs() {
		for off := 0; off <= len(doc); off += 1 + r.IntN(3) {
			for _, e := range []string{edits[r.IntN(len(edits))], edits[r.IntN(len(edits))]} {
				b := make([]byte, 0, len(doc)+len(e))
				b = append(append(append(b, doc[:off]...), e...), doc[off:]...)
				checkBlockVerdict(t, d, off, b)
				// The same bytes replacing rather than inserting.
				b = append(b[:0], doc...)
				copy(b[off:], e)
				checkBlockVerdict(t, d, off, b)
			}
		}
	}
}

func checkBlockVerdict(t *testing.T, doc, off int, b []byte) {
	t.Helper()
	want := refKind(b)
	for _, on := range []bool{true, false} {
		withBlocks(on, func() {
			if k, _ := Of(b); k != want {
				t.Fatalf("doc %d, edit at %d, blocks %v: Kind = %v, want %v\n%q", doc, off, on, k, want, b)
			}
			for _, cut := range []int{off, off + 1, 300, len(b) / 2} {
				if cut <= 0 || cut >= len(b) {
					continue
				}
				var c Classifier
				c.Write(b[:cut])
				c.Write(b[cut:])
				if k := c.Kind(); k != want {
					t.Fatalf("doc %d, edit at %d, cut at %d, blocks %v: Kind = %v, want %v\n%q", doc, off, cut, on, k, want, b)
				}
			}
		})
	}
}

// TestBlockLongTokens crosses block and batch boundaries with single
// tokens: long strings with escapes and backslash runs at every offset of
// a block, long numbers, deep nesting, long runs of whitespace.
func TestBlockLongTokens(t *testing.T) {
	var cases [][]byte
	for k := range 130 {
		pad := strings.Repeat("a", k)
		cases = append(cases,
			[]byte(`["`+pad+`\\"`+pad+`", 1]`),
			[]byte(`["`+pad+`\"`+pad+`", 1]`),
			[]byte(`["`+pad+`\\\"`+pad+`", 1]`),
			[]byte(`["`+pad+`\\\\"]`+strings.Repeat(" ", 300)),
			[]byte(`{"`+pad+`":"\u12`+pad+`"}`+strings.Repeat("\n", 300)),
			[]byte(strings.Repeat(" ", 200+k)+`{"a":`+strings.Repeat("1", 2*k+1)+`.5e-7}`+strings.Repeat(" ", 70)),
			[]byte(strings.Repeat(" ", 64+k)+strings.Repeat("[", 2*k+1)+strings.Repeat("]", 2*k+1)+strings.Repeat(" ", 64)),
		)
	}
	cases = append(cases,
		[]byte(strings.Repeat("[", maxDepth)+strings.Repeat("]", maxDepth)),
		[]byte(strings.Repeat("[", maxDepth+1)+strings.Repeat("]", maxDepth+1)),
		[]byte(strings.Repeat(`{"":`, maxDepth)+"{}"+strings.Repeat("}", maxDepth)),
	)
	for i, b := range cases {
		checkBlockVerdict(t, i, 0, b)
	}
}

// TestEscClass holds the class of bytes that may follow a backslash (which
// the block walk tests) to escape, the byte-wise definition.
func TestEscClass(t *testing.T) {
	for c := range 256 {
		want := escape([]byte{'\\', byte(c), '0', '0', '0', '0'}, 0) >= 0
		if got := class[c]&cEsc != 0; got != want {
			t.Errorf("byte %#x: cEsc %v, want %v", c, got, want)
		}
	}
}

// TestBlockScalars puts numbers and literals, valid and not, at every
// offset of a block, after a key and in an array, where the walk checks
// them from the masks or hands them to scalarAt (at a block's end), and
// checks the verdict against the standard library, with and without the
// block path.
func TestBlockScalars(t *testing.T) {
	scalars := []string{
		"0", "-0", "7", "-7", "01", "-01", "00", "10", "1234567890123", "-", "--1", "+1",
		"0.5", "-0.5", "1.25", "12.5", "1.", ".5", "-.5", "0.", "00.5", "1.2.3", "1..2", "1-2",
		"1e5", "1E+5", "1e-05", "-1.5e3", "1e", "1e+", "1.5e", "0e0", "1ee5", "1e5.5",
		"true", "false", "null", "tru", "fals", "nul", "truex", "falsee", "nulll", "True",
		"t", "nulx", "fal5e", "1x", "1\\", "Infinity", "NaN",
	}
	for _, sc := range scalars {
		for off := range 140 {
			pad := strings.Repeat(" ", off)
			docs := []string{
				`{"k":` + pad + sc + `,"z":[1,2,3],"pad":"` + strings.Repeat("x", 200) + `"}`,
				`[` + pad + sc + `]` + strings.Repeat(" ", 200),
				`[1,` + pad + sc + "\n," + sc + `,"` + strings.Repeat("y", 150) + `",` + sc + `]`,
			}
			for d, doc := range docs {
				checkBlockVerdict(t, d, off, []byte(doc))
			}
		}
	}
}

// BenchmarkBlockEvents measures the vector pass alone (both variants where
// the machine has them) over 32 KiB of compact JSON, a batch at a time.
func BenchmarkBlockEvents(b *testing.B) {
	if !hasBlocks {
		b.Skip("no vector blockEvents on this machine")
	}
	p := benchAPI(32 << 10)
	p = p[:len(p)&^(batchBlocks<<6-1)]
	for _, avx512 := range []bool{true, false} {
		if avx512 && !hasAVX512 {
			continue
		}
		b.Run(map[bool]string{true: "AVX-512", false: "AVX2"}[avx512], func(b *testing.B) {
			withAVX512(avx512, func() {
				var out eventBatch
				var bs blockState
				b.SetBytes(int64(len(p)))
				for b.Loop() {
					for i := 0; i < len(p); i += batchBlocks << 6 {
						blockEvents(p[i:], batchBlocks, &out, &bs)
					}
				}
			})
		})
	}
}
