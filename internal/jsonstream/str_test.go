package jsonstream

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzStrReader: the streamed decoding of a JSON string is byte for byte
// encoding/json's, and stops right after the closing quote. chunk picks
// the size of the reads and of the bufio buffer, from a few bytes (one
// character at a time) to sizes where the word-at-a-time runs and the
// checks of their UTF-8 run, and constructs fall across buffer refills.
func FuzzStrReader(f *testing.F) {
	for _, s := range []string{`plain`, `a\"b\\c\/d\b\f\n\r\t`, `\u00e9\u20AC`, `\ud83d\ude00`, `\ud83d`, `\ud83dx`,
		`\ude00\ud83d`, `\ud83d\u0041`, `\u0000`, "\xff\xfe", "\xe2\x82", "é€😀", `\x`, `\u12`, "a\x01b", strings.Repeat(`ab\n`, 40)} {
		f.Add([]byte(s), uint8(1))
	}
	// The word-at-a-time path: lengths 7, 8 and 9 mod 8, an escape, a
	// surrogate pair or a character at every offset of a word and across
	// the 16- and 24-byte buffers, invalid bytes inside long runs.
	for _, k := range []int{0, 1, 3, 7} {
		pad := strings.Repeat("x", k)
		for _, s := range []string{
			pad + `abcdefg`, pad + `abcdefgh`, pad + `abcdefghi`,
			pad + `abcdefghijklmno\nqrstuvwxyz\"0123456789\\`,
			pad + `abcdefghijklm\ud83d\ude00nopqrstuvwxyz\u0000zz`,
			pad + "abcdefghijklmn😀opqrstuvwéxyzabcdefgh€ij",
			pad + "abcdefghijklmnop\xe2\x82opqrstuvw\xffxyzabcdefgh\xed\xa0\x80ij",
			pad + "abcdefghijklmnopqrstuvwxyz\x1fabc",
			pad + strings.Repeat("lí \\\"c\\\"\\t 😀\\n", 6),
		} {
			// Reads of 64, 4096, 17 and 4096 bytes from buffers of 16,
			// 24, 64 and 4096 bytes.
			for _, c := range []uint8{9, 21, 30, 43} {
				f.Add([]byte(s), c)
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		lit := append(append([]byte{'"'}, in...), '"')
		var want string
		valid := json.Unmarshal(lit, &want) == nil
		reads := []int{1, 2, 3, 5, 7, 8, 9, 16, 17, 64, 4096}[int(chunk)%11]
		buffer := []int{16, 24, 64, 4096}[int(chunk)/11%4]
		br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(in), strings.NewReader(`"TAIL`)), buffer)
		got, err := readChunks(&StringReader{br: br}, reads)
		if !valid {
			return // only no panic and no hang
		}
		if err != nil || string(got) != want {
			t.Fatalf("%q: got %q (%v), want %q", in, got, err, want)
		}
		if rest, _ := io.ReadAll(br); string(rest) != "TAIL" {
			t.Fatalf("%q: left %q after the string", in, rest)
		}
	})
}

// readChunks reads r to the end with reads of at most n bytes.
func readChunks(r io.Reader, n int) ([]byte, error) {
	var out []byte
	buf := make([]byte, n)
	for {
		k, err := r.Read(buf)
		out = append(out, buf[:k]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// FuzzB64Reader: chunked decoding gives what base64.StdEncoding.Decode
// gives the whole text, or fails when it fails. chunk picks the reads
// (a few bytes, decoded through the reader's own buffer, or large ones,
// decoded straight into the caller's) and the reader's input buffer.
func FuzzB64Reader(f *testing.F) {
	for _, s := range []string{"", "QQ==", "QUJD", "QUJDRA==", "QU\r\nJD", "QQ==QQ==", "QUJ", "Q===", "!!!!", "QUJDRA=="} {
		f.Add([]byte(s), uint8(3))
	}
	long := base64.StdEncoding.EncodeToString([]byte("a streamed image, its bytes decoded in large blocks"))
	for _, s := range []string{long, long[:len(long)-1], long[:len(long)-4] + "====", long + "QQ==", long[:20] + "\r\n" + long[20:], long[:7], long[:8], long[:9]} {
		for _, c := range []uint8{0, 1, 6, 7, 12, 13, 26, 27} {
			f.Add([]byte(s), c)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		want := make([]byte, base64.StdEncoding.DecodedLen(len(in)))
		n, werr := base64.StdEncoding.Decode(want, in)
		var src io.Reader = bytes.NewReader(in)
		if chunk%2 == 1 {
			src = iotest.OneByteReader(src)
		}
		b := NewB64Reader(src, testChunk)
		if chunk/2%3 != 0 {
			b.in = make([]byte, 4+int(chunk)%13) // the carry and the padding across small blocks
		}
		got, gerr := readChunks(b, []int{1, 2, 3, 5, 64, 4096}[int(chunk)/6%6])
		if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got, want[:n]) {
			t.Fatalf("%q: got %q, %v; want %q, %v", in, got, gerr, want[:n], werr)
		}
	})
}

// FuzzB64String: base64 text in a JSON string, decoded on the fly (the
// string's plain runs taken straight from its buffer, the rest through its
// decoder), gives what encoding/json gives for a []byte, fails exactly
// when it fails, and stops right after the closing quote.
func FuzzB64String(f *testing.F) {
	long := base64.StdEncoding.EncodeToString([]byte("a streamed screenshot, decoded as it arrives, in large blocks"))
	for _, s := range []string{"", "QQ==", long, long[:30] + `\/` + long[31:], long[:30] + `\u0041` + long[31:],
		long[:40] + `\n` + long[40:], long[:40] + `\r\n` + long[40:], long[:40] + "\n" + long[40:], long[:40] + "\t" + long[40:],
		long[:17] + "\x00" + long[17:], long[:44] + "=" + long[45:], long + "QQ==", long[:len(long)-1], long + `\"`, "\xc3\xa9" + long} {
		for _, c := range []uint8{0, 1, 5, 14, 23, 38} {
			f.Add([]byte(s), c)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		lit := append(append([]byte{'"'}, in...), '"')
		var want []byte
		werr := json.Unmarshal(lit, &want)
		buffer := []int{16, 24, 64, 4096}[int(chunk)%4]
		br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(in), strings.NewReader(`"TAIL`)), buffer)
		sr := &StringReader{br: br}
		b := NewB64Reader(sr, testChunk)
		if chunk/4%2 == 1 {
			b.in = make([]byte, 4+int(chunk)%13)
		}
		got, gerr := readChunks(b, []int{1, 3, 64, 4096}[int(chunk)/8%4])
		rest, _ := io.ReadAll(br)
		if gerr == nil && string(rest) != "TAIL" {
			return // a quote in the input ended the string early: not this string
		}
		if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q, %v; want %q, %v", in, got, gerr, want, werr)
		}
		if werr == nil && (!sr.done || string(rest) != "TAIL") {
			t.Fatalf("%q: done %v, left %q after the string", in, sr.done, rest)
		}
	})
}

// testChunk is the text a B64Reader reads at a time in the tests, as the
// proxy's.
const testChunk = 64 << 10
