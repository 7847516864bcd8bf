package jsonstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// tokEvent is one event with where it left the tokenizer: the offset in
// the whole input after the bytes consumed, and the event's level.
type tokEvent struct {
	ev    Event
	off   int
	level int
}

// tokenize feeds in to a tokenizer watching stops up to level, in chunks
// whose lengths next picks, and returns the events and whether the input
// was one complete valid value.
func tokenize(in []byte, stops Stops, level int, next func(int) int) ([]tokEvent, bool) {
	var t Tokenizer
	t.Watch(stops, level)
	var evs []tokEvent
	off := 0
	for off < len(in) {
		chunk := in[off:min(len(in), off+next(len(in)-off))]
		for len(chunk) > 0 {
			n, ev := t.Scan(chunk)
			chunk, off = chunk[n:], off+n
			if ev == Bad {
				return evs, false
			}
			if ev == None {
				if len(chunk) != 0 {
					panic("None before the end of the chunk")
				}
				break
			}
			lv := t.Level()
			if ev == Value && (in[off-1] == '{' || in[off-1] == '[') {
				lv--
			}
			evs = append(evs, tokEvent{ev, off, lv})
		}
	}
	return evs, t.Complete() && t.Err() == nil
}

// randomSplits returns chunk lengths drawn from r: mostly short, some
// long.
func randomSplits(r *rand.Rand) func(int) int {
	return func(left int) int {
		if r.IntN(4) == 0 {
			return 1 + r.IntN(left)
		}
		return 1 + r.IntN(min(left, 9))
	}
}

// decoderTokens returns the tokens encoding/json's Decoder reads from a
// valid input, rendered as tokensOf renders the tokenizer's events.
func decoderTokens(in []byte) ([]string, error) {
	d := json.NewDecoder(bytes.NewReader(in))
	d.UseNumber()
	var out []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%T %v", tok, tok))
	}
}

// tokensOf renders the tokens the events of a valid input delimit, as
// decoderTokens does: keys and strings decoded, numbers as written.
func tokensOf(t *testing.T, in []byte, evs []tokEvent) []string {
	t.Helper()
	var out []string
	start := -1 // offset of an open scalar's first byte
	end := bytes.TrimRight(in, " \t\r\n")
	emit := func(raw []byte) {
		switch c := raw[0]; {
		case c == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatalf("%q: string token %q: %v", in, raw, err)
			}
			out = append(out, fmt.Sprintf("%T %v", s, s))
		case c == 't' || c == 'f':
			out = append(out, fmt.Sprintf("%T %v", c == 't', c == 't'))
		case c == 'n':
			out = append(out, fmt.Sprintf("%T %v", nil, nil))
		default:
			n := json.Number(raw)
			out = append(out, fmt.Sprintf("%T %v", n, n))
		}
	}
	for _, e := range evs {
		switch e.ev {
		case Value:
			switch c := in[e.off-1]; c {
			case '{', '[':
				out = append(out, fmt.Sprintf("%T %v", json.Delim(c), json.Delim(c)))
			default:
				start = e.off - 1
			}
		case Key:
			start = e.off - 1
		case KeyEnd:
			emit(in[start:e.off])
			start = -1
		case ValueEnd:
			if start >= 0 {
				emit(in[start:e.off])
				start = -1
				break
			}
			c := in[e.off-1]
			out = append(out, fmt.Sprintf("%T %v", json.Delim(c), json.Delim(c)))
		}
	}
	if start >= 0 { // a top-level number ended by the input
		emit(end[start:])
	}
	return out
}

const allStops = StopValue | StopValueEnd | StopKey | StopKeyEnd

// FuzzTokenizer holds the tokenizer to encoding/json on the same input
// fed in chunks split at random points: it accepts exactly what json.Valid
// accepts, watching nothing or everything; on valid input its events
// delimit exactly the tokens json.Decoder reads; and watching up to a
// level reports exactly the events at that level or above.
func FuzzTokenizer(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `[-2e3, 1E+2, 0e0, 1.5e-3]`, `1e`, `-0.`, ` {"a" : [1, -0.5e+3, true, false, null, "x\u00e9\"\\"]} `,
		`01`, `1.`, `-`, `{"a":1,}`, `[1,]`, `"\x01"`, `"\ud800"`, `"\uZZZZ"`, `{"a"}`, `tru`, `nul`, "\"\xff\xfe\"",
		`{"k":{"k":[{}]}}`, `0`, ` 12 `, `[[[]],{"":{"":[]}}]`, `{"a":"b"} x`, `"12345678\"12345\\"`, `[1,2]]`, "\t\n\r "} {
		f.Add([]byte(s), uint64(len(s)))
	}
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		r := rand.New(rand.NewPCG(seed, seed>>7))
		valid := json.Valid(in)
		if _, ok := tokenize(in, 0, 0, randomSplits(r)); ok != valid {
			t.Fatalf("%q: json.Valid %v, tokenizer (no events) %v", in, valid, ok)
		}
		all, ok := tokenize(in, allStops, MaxNesting, randomSplits(r))
		if ok != valid {
			t.Fatalf("%q: json.Valid %v, tokenizer (all events) %v", in, valid, ok)
		}
		if !valid {
			return
		}
		want, err := decoderTokens(in)
		if err != nil {
			t.Fatalf("%q: json.Valid but the Decoder says %v", in, err)
		}
		if got := tokensOf(t, in, all); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("%q: tokens\n got %q\nwant %q", in, got, want)
		}
		level := int(seed % 4)
		stops := Stops(seed>>2) & allStops
		some, _ := tokenize(in, stops, level, randomSplits(r))
		var wantSome []tokEvent
		for _, e := range all {
			if e.level <= level && stops&(1<<(e.ev-1)) != 0 {
				wantSome = append(wantSome, e)
			}
		}
		if fmt.Sprint(some) != fmt.Sprint(wantSome) {
			t.Fatalf("%q, stops %b up to level %d: events\n got %v\nwant %v", in, stops, level, some, wantSome)
		}
	})
}

// TestTokenizerEvents: the events of a document, where each leaves the
// tokenizer, and their levels.
func TestTokenizerEvents(t *testing.T) {
	in := []byte(` {"a": [1, "x", true], "b": {}} `)
	evs, ok := tokenize(in, allStops, MaxNesting, func(left int) int { return left })
	if !ok {
		t.Fatal("not complete")
	}
	want := []tokEvent{
		{Value, 2, 0}, {Key, 3, 1}, {KeyEnd, 5, 1}, {Value, 8, 1},
		{Value, 9, 2}, {ValueEnd, 9, 2}, {Value, 12, 2}, {ValueEnd, 14, 2}, {Value, 17, 2}, {ValueEnd, 20, 2},
		{ValueEnd, 21, 1}, {Key, 24, 1}, {KeyEnd, 26, 1}, {Value, 29, 1}, {ValueEnd, 30, 1}, {ValueEnd, 31, 0},
	}
	if fmt.Sprint(evs) != fmt.Sprint(want) {
		t.Fatalf("events\n got %v\nwant %v", evs, want)
	}
	// Watching only level 0: the document's start and end.
	evs, _ = tokenize(in, StopValue|StopValueEnd, 0, func(int) int { return 1 })
	if want := []tokEvent{{Value, 2, 0}, {ValueEnd, 31, 0}}; fmt.Sprint(evs) != fmt.Sprint(want) {
		t.Fatalf("level 0, a byte at a time: got %v, want %v", evs, want)
	}
}

// TestTokenizerErrors: a syntax error is Bad where it is found, sticks, and
// is ErrBadJSON; a cut value is neither Bad nor Complete.
func TestTokenizerErrors(t *testing.T) {
	for _, tc := range []struct {
		in string
		at int // offset of the bad byte: the bytes consumed
	}{
		{`{"a" 1}`, 5}, {`[1 2]`, 3}, {`{1:2}`, 1}, {`"\x"`, 2}, {"\"a\x01\"", 2}, {`01`, 1},
		{`[1,]`, 3}, {`tx`, 1}, {`{} {}`, 3}, {`]`, 0}, {`-a`, 1}, {`1.e`, 2}, {`"\u12g"`, 5}, {`[}`, 1},
	} {
		var tok Tokenizer
		n, ev := tok.Scan([]byte(tc.in))
		if ev != Bad || n != tc.at || !errors.Is(tok.Err(), ErrBadJSON) || tok.Complete() {
			t.Errorf("%q: %d %v %v, want Bad at %d", tc.in, n, ev, tok.Err(), tc.at)
		}
		if n, ev := tok.Scan([]byte(" ")); n != 0 || ev != Bad {
			t.Errorf("%q: after the error %d %v", tc.in, n, ev)
		}
	}
	for _, in := range []string{`{"a":`, `[1,`, `"ab`, `"\u12`, `tr`, `-`, ``, `  `, `1.`, `1e+`} {
		var tok Tokenizer
		if _, ev := tok.Scan([]byte(in)); ev != None || tok.Err() != nil || tok.Complete() {
			t.Errorf("%q: %v %v complete %v", in, ev, tok.Err(), tok.Complete())
		}
	}
}

// TestTokenizerDepth: the nesting limit is json.Valid's, counting the
// containers Reset says are open around the value.
func TestTokenizerDepth(t *testing.T) {
	for _, base := range []int{0, 1, 100} {
		for _, n := range []int{MaxNesting - base, MaxNesting - base + 1} {
			for _, in := range []string{
				strings.Repeat("[", n) + strings.Repeat("]", n),
				strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1),
			} {
				var tok Tokenizer
				tok.Reset(base)
				_, ev := tok.Scan([]byte(in))
				if ok := ev != Bad && tok.Complete(); ok != (n <= MaxNesting-base) {
					t.Errorf("base %d, %d deep: %v complete %v", base, n, ev, tok.Complete())
				}
				if base == 0 && json.Valid([]byte(in)) != (ev != Bad) {
					t.Errorf("%d deep: json.Valid disagrees", n)
				}
			}
		}
	}
}

// TestTokenizerReset: Reset starts a new value, keeping the watch.
func TestTokenizerReset(t *testing.T) {
	var tok Tokenizer
	tok.Watch(StopValueEnd, 0)
	if _, ev := tok.Scan([]byte(`{"a":[`)); ev != None {
		t.Fatal(ev)
	}
	tok.Reset(0)
	if n, ev := tok.Scan([]byte(`"s" , 1`)); ev != ValueEnd || n != 3 || tok.First() != '"' {
		t.Fatalf("%d %v %q", n, ev, tok.First())
	}
}

// TestTokenizerNoAllocs: Scan does not allocate, whatever it stops at.
func TestTokenizerNoAllocs(t *testing.T) {
	in := []byte(`{"a": [1, "x\u00e9", true, null, -1.5e3], "b": {"c": false}}`)
	var tok Tokenizer
	if a := testing.AllocsPerRun(100, func() {
		tok.Reset(0)
		tok.Watch(allStops, MaxNesting)
		for p := in; len(p) > 0; {
			n, ev := tok.Scan(p)
			if ev == Bad {
				panic("bad")
			}
			p = p[n:]
		}
	}); a != 0 {
		t.Fatalf("%v allocations per document", a)
	}
}

// BenchmarkTokenizer measures the scan of a JSON document in 32 KiB
// chunks, watching nothing (the classifier's use) and every event at the
// first two levels (the outline's and the id scanner's).
func BenchmarkTokenizer(b *testing.B) {
	doc := []byte(`[` + strings.Repeat(`{"id": 123456, "name": "file_é_file", "score": -12.5e3, "ok": true, "tags": ["a", "bb", null]},`+"\n", 4000) + `{}]`)
	for _, bc := range []struct {
		name  string
		stops Stops
		level int
	}{{"validate", 0, 0}, {"events-2", allStops, 2}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			var tok Tokenizer
			for b.Loop() {
				tok.Reset(0)
				tok.Watch(bc.stops, bc.level)
				for off := 0; off < len(doc); off += 32 << 10 {
					p := doc[off:min(len(doc), off+32<<10)]
					for len(p) > 0 {
						n, ev := tok.Scan(p)
						if ev == Bad {
							b.Fatal("bad")
						}
						p = p[n:]
					}
				}
				if !tok.Complete() {
					b.Fatal("not complete")
				}
			}
		})
	}
}
