package mcpproxy

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
// encoding/json's, and stops right after the closing quote.
func FuzzStrReader(f *testing.F) {
	for _, s := range []string{`plain`, `a\"b\\c\/d\b\f\n\r\t`, `\u00e9\u20AC`, `\ud83d\ude00`, `\ud83d`, `\ud83dx`,
		`\ude00\ud83d`, `\ud83d\u0041`, `\u0000`, "\xff\xfe", "\xe2\x82", "é€😀", `\x`, `\u12`, "a\x01b", strings.Repeat(`ab\n`, 40)} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		lit := append(append([]byte{'"'}, in...), '"')
		var want string
		valid := json.Unmarshal(lit, &want) == nil
		br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(in), strings.NewReader(`"TAIL`)), 16)
		got, err := readChunks(&strReader{br: br}, int(chunk)%7+1)
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
// gives the whole text, or fails when it fails.
func FuzzB64Reader(f *testing.F) {
	for _, s := range []string{"", "QQ==", "QUJD", "QUJDRA==", "QU\r\nJD", "QQ==QQ==", "QUJ", "Q===", "!!!!", "QUJDRA=="} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		want := make([]byte, base64.StdEncoding.DecodedLen(len(in)))
		n, werr := base64.StdEncoding.Decode(want, in)
		b := newB64Reader(iotest.OneByteReader(bytes.NewReader(in)))
		if chunk%2 == 0 {
			b = newB64Reader(bytes.NewReader(in))
		}
		got, gerr := readChunks(b, int(chunk)%5+1)
		if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got, want[:n]) {
			t.Fatalf("%q: got %q, %v; want %q, %v", in, got, gerr, want[:n], werr)
		}
	})
}
