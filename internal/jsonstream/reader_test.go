package jsonstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzJReader: the streaming reader accepts exactly what json.Valid
// accepts, and copies a value byte for byte.
func FuzzJReader(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `[-2e3, 1E+2, 0e0, 1.5e-3]`, `1e`, `-0.`, ` {"a" : [1, -0.5e+3, true, false, null, "x\u00e9\"\\"]} `, `01`, `1.`, `-`, `1e`,
		`{"a":1,}`, `[1,]`, `"\x01"`, `"\ud800"`, `"\uZZZZ"`, `{"a"}`, `tru`, `nul`, "\"\xff\xfe\"", `{"k":{"k":[{}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkJReader(t, in) })
}

// TestJReaderDepth: the nesting limit is json.Valid's.
func TestJReaderDepth(t *testing.T) {
	for _, n := range []int{MaxNesting, MaxNesting + 1} {
		checkJReader(t, []byte(strings.Repeat("[", n)+strings.Repeat("]", n)))
		checkJReader(t, []byte(strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n)))
	}
}

// checkJReader compares the streaming reader with json.Valid on in.
func checkJReader(t *testing.T, in []byte) {
	t.Helper()
	var out Buf
	j := NewReader(bufio.NewReaderSize(bytes.NewReader(in), 16), 0)
	err := j.Value(&out)
	if err == nil {
		if _, perr := j.Peek(Discard{}); perr != io.EOF {
			err = ErrBadJSON
		}
	}
	if valid := json.Valid(in); valid != (err == nil) {
		t.Fatalf("json.Valid %v, Reader %v", valid, err)
	}
	if err == nil && !bytes.Equal(out, bytes.TrimRight(in, " \t\r\n")) {
		t.Fatalf("copy differs: %q", out)
	}
}

// TestReaderTracksDepth: a Reader started inside open containers counts
// them against the nesting limit, and is back at its depth after each
// value, whether the walk is its own or a caller's.
func TestReaderTracksDepth(t *testing.T) {
	for _, at := range []int{0, 1, 7} {
		for _, n := range []int{MaxNesting - at, MaxNesting - at + 1} {
			in := strings.Repeat("[", n) + strings.Repeat("]", n) + " " + `{"a":[{"b":1}]}`
			j := NewReader(bufio.NewReaderSize(strings.NewReader(in), 16), at)
			err := j.Value(Discard{})
			if want := n <= MaxNesting-at; (err == nil) != want {
				t.Fatalf("at %d, %d deep: %v", at, n, err)
			}
			if err != nil {
				continue
			}
			if j.depth != at {
				t.Fatalf("at %d: depth %d after a value", at, j.depth)
			}
			if c, err := j.Next(Discard{}); err != nil || c != '{' {
				t.Fatalf("at %d: %q %v", at, c, err)
			}
			var keys []string
			err = j.Members(Discard{}, func(key string) error {
				keys = append(keys, key)
				if j.depth != at+1 {
					t.Fatalf("at %d: depth %d inside an object", at, j.depth)
				}
				return j.Elements(Discard{}, func(int) error {
					_, err := j.Small(Discard{})
					return err
				})
			}, true)
			if err != nil || j.depth != at || len(keys) != 1 || keys[0] != "a" {
				t.Fatalf("at %d: %v, depth %d, keys %q", at, err, j.depth, keys)
			}
		}
	}
}

// TestReaderErrors: the end of input or a failing read inside a value is
// ErrBadJSON or the read's error, and a failing sink stops the copy.
func TestReaderErrors(t *testing.T) {
	for _, in := range []string{`{"a":`, `[1,`, `"ab`, `"\u12`, `tr`, `-`, `{"a" 1}`, `{1:2}`, `[1 2]`} {
		j := NewReader(bufio.NewReader(strings.NewReader(in)), 0)
		if err := j.Value(Discard{}); !errors.Is(err, ErrBadJSON) {
			t.Errorf("%q: %v", in, err)
		}
	}
	boom := errors.New("boom")
	j := NewReader(bufio.NewReaderSize(io.MultiReader(strings.NewReader(`{"a":"`), iotest.ErrReader(boom)), 16), 0)
	if err := j.Value(Discard{}); !errors.Is(err, boom) {
		t.Errorf("a failing read: %v", err)
	}
	j = NewReader(bufio.NewReader(strings.NewReader(`{"a":[1,true,"x"]}`)), 0)
	if err := j.Value(failSink{boom}); !errors.Is(err, boom) {
		t.Errorf("a failing sink: %v", err)
	}
	if j.Buffered() == nil {
		t.Error("no buffered input")
	}
}

type failSink struct{ err error }

func (f failSink) Write([]byte) (int, error) { return 0, f.err }
func (f failSink) WriteByte(byte) error      { return f.err }
