package viewengine

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// stdDecode is the reference: encoding/json's Decoder with UseNumber over
// every value of b, long numbers read as floats.
func stdDecode(b []byte) ([]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []any
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, false
	}
	normalizeNumbers(out)
	return out, true
}

var decodeSeeds = []string{
	`{"a":[1,2.5,-3e7,true,false,null],"b":"x\u00e9\n\"\\\/"}`, `1 2 [3]{"a":4}"s"`, `01`, `1true`, `[]{}`, `"a""b"`,
	`"\ud83d\ude00 \ud83d x \udc00 \ud800\u0041"`, "\"\xff\xfe ok \xc3\xa9\"", `{"a":1,"a":2}`, ` `, ``, `[1,]`, `{"a"}`,
	`-`, `1.`, `1e`, `.5`, `+1`, `tru`, `nul`, `[1 2]`, "\"\x01\"", `"\x"`, `"\u12"`, `[[[[]]]]`, `{"":{"":[]}}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"n":` + strings.Repeat("9", 1001) + `}`, "\t\r\n 1 \t", `1-2`, `"\u0000"`, `[1,2]]`,
}

// FuzzDecode: the query's decoder reads exactly what encoding/json's
// Decoder reads, the same values and the same refusals.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantOK := stdDecode(b)
		got, err := decodeValues(b, &meter{limit: 1 << 62})
		if (err == nil) != wantOK {
			t.Fatalf("%q: decoder %v, encoding/json ok %v", b, err, wantOK)
		}
		if wantOK && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", b, got, want)
		}
	})
}

func TestDecodeSeeds(t *testing.T) {
	for _, s := range decodeSeeds {
		want, wantOK := stdDecode([]byte(s))
		got, err := decodeValues([]byte(s), &meter{limit: 1 << 62})
		if (err == nil) != wantOK || wantOK && !reflect.DeepEqual(got, want) {
			t.Errorf("%.40q: got %v %v, want ok %v", s, got, err, wantOK)
		}
	}
}

// heapOf is the heap a decoded document holds, measured after a collection.
func heapOf(t *testing.T, body []byte) (held, charged int64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := &meter{limit: 1 << 62}
	v, err := decodeValues(body, m)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), m.used
}

// TestDecodeChargesWhatItHolds: the meter's charge for a decoded document
// is at least the heap it holds, and not more than a few times it, for
// documents of every shape.
func TestDecodeChargesWhatItHolds(t *testing.T) {
	shapes := map[string]string{
		"small ints":    "[" + strings.Repeat("1,", 200000) + "1]",
		"strings":       "[" + strings.Repeat(`"abcdefghijklmnopqrstuvwxyz",`, 100000) + `""]`,
		"empty objects": "[" + strings.Repeat("{},", 100000) + "{}]",
		"small objects": "[" + strings.Repeat(`{"a":1,"bb":"x"},`, 100000) + "{}]",
		"wide object":   "{" + wideObject(100000) + "}",
		"nested arrays": strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
		"escaped":       "[" + strings.Repeat(`"\u00e9\n\t",`, 100000) + `""]`,
	}
	for name, body := range shapes {
		held, charged := heapOf(t, []byte(body))
		t.Logf("%s: %d bytes of text, holds %d, charged %d", name, len(body), held, charged)
		if charged < held || charged > 4*max(held, 1<<16) {
			t.Errorf("%s: holds %d bytes, charged %d", name, held, charged)
		}
	}
}

func wideObject(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"key` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strconv.Itoa(i) + `":1`)
	}
	return b.String()
}

// TestDecodeRefusesOverTheMeter: a document whose decoded form is over the
// bound is refused while it is decoded, before it is held whole; one
// within it decodes.
func TestDecodeRefusesOverTheMeter(t *testing.T) {
	body := []byte("[" + strings.Repeat(`{"a":[1,2,3]},`, 100000) + "1]")
	_, charged := heapOf(t, body)
	if _, err := decodeValues(body, &meter{limit: charged - 1}); !errors.Is(err, errOverMeter) {
		t.Fatalf("one byte under its charge: %v", err)
	}
	// while it decodes it holds its scratch stack too, dropped at the end
	if _, err := decodeValues(body, &meter{limit: 2 * charged}); err != nil {
		t.Fatalf("at twice its charge: %v", err)
	}
	// refused early: a meter of a tenth stops within about a tenth
	m := &meter{limit: charged / 10}
	if _, err := decodeValues(body, m); !errors.Is(err, errOverMeter) || m.used > charged/5 {
		t.Fatalf("stopped at %d of %d: %v", m.used, charged, err)
	}
	if _, err := decodeValues([]byte("[1,"), &meter{limit: 1 << 30}); !errors.Is(err, errNotJSON) {
		t.Fatalf("truncated: %v", err)
	}
}

// BenchmarkDecode compares the query's decoder with encoding/json's
// Decoder (UseNumber) on a 4 MB document of small objects.
func BenchmarkDecode(b *testing.B) {
	body := []byte("[" + strings.Repeat(`{"id":12345,"name":"some name","tags":["a","b"],"ok":true},`, 70000) + "{}]")
	b.Run("meter", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeValues(body, &meter{limit: 1 << 40}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := stdDecode(body); !ok {
				b.Fatal("not JSON")
			}
		}
	})
}
