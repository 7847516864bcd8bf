package viewengine

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The query's JSON decoder. It reads a body of one or more JSON values as
// encoding/json's Decoder with UseNumber reads them (the same values, the
// same refusals: FuzzDecode compares the two; a number of more than
// guardDigits digits is read as a float), but it charges what it
// allocates to the query's meter as it allocates it and stops as soon as
// the meter is over its bound, so a document whose decoded form would
// exceed the query's memory bound is refused while it is decoded, before
// it is held whole. It reads the body in place (encoding/json's Decoder
// copies the whole value into a buffer of its own, up to three times its
// size while that buffer grows) and builds each array and object at its
// final size.

// maxDecodeDepth is encoding/json's nesting limit.
const maxDecodeDepth = 10000

// The decoder's refusals: the body is not JSON, or its decoded form is
// over the meter's bound.
var (
	errNotJSON   = errors.New("not JSON")
	errOverMeter = errors.New("decoded document over the query's memory bound")
)

// What a decoded value costs, in bytes of heap: an upper bound of Go's
// allocation for each (the size class rounding included;
// TestDecodeChargesWhatItHolds compares them with the heap).
const (
	costBoxed    = 32  // a string or number stored in an interface: its header, and rounding
	costSlot     = 16  // an interface in an array, or on the scratch stack
	costArray    = 48  // a slice header stored in an interface, and rounding
	costObject   = 64  // a map's header
	costSmallMap = 288 // the one group of slots of a map of 1 to 8 entries
	costEntry    = 80  // an entry of a larger map: key and value slots, control bytes, load factor, table rounding
	costKeyBytes = 8   // a key's bytes' rounding
)

// meter is one query's account of the memory it holds: its body, its
// decoded document and what its filter produced. charge reports false once
// the total is over limit.
type meter struct {
	used, limit int64
}

func (m *meter) charge(n int64) bool {
	m.used += n
	return m.used <= m.limit
}

// decoder reads JSON values from b.
type decoder struct {
	b     []byte
	i     int
	m     *meter
	stack []any // the values of the open arrays and objects (keys as strings)
	depth int
	buf   []byte // an unescaped string being built
}

// decodeValues decodes every value of b, charging m; errNotJSON or
// errOverMeter when it cannot.
func decodeValues(b []byte, m *meter) ([]any, error) {
	d := &decoder{b: b, m: m}
	var out []any
	for {
		d.space()
		if d.i == len(d.b) {
			break
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		if !m.charge(costSlot) {
			return nil, errOverMeter
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errNotJSON
	}
	m.used -= int64(cap(d.stack)) * costSlot // the scratch stack is dropped
	return out, nil
}

func (d *decoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// push adds v to the scratch stack, charging its growth.
func (d *decoder) push(v any) bool {
	if len(d.stack) == cap(d.stack) {
		old := cap(d.stack)
		d.stack = append(d.stack, v)
		return d.m.charge(int64(cap(d.stack)-old) * costSlot)
	}
	d.stack = append(d.stack, v)
	return true
}

func (d *decoder) value() (any, error) {
	if d.i == len(d.b) {
		return nil, errNotJSON
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		if !d.m.charge(costBoxed + int64(len(s))) {
			return nil, errOverMeter
		}
		return s, nil
	case c == '-' || c >= '0' && c <= '9':
		n, err := d.number()
		if err != nil {
			return nil, err
		}
		if !d.m.charge(costBoxed + int64(len(n))) {
			return nil, errOverMeter
		}
		if len(n) > guardDigits {
			// read as a float, as jq does, so that no step parses a
			// huge integer (gojq would, on every arithmetic use, in
			// quadratic time)
			f, _ := strconv.ParseFloat(string(n), 64)
			return f, nil
		}
		return n, nil
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, errNotJSON
}

func (d *decoder) literal(s string) error {
	if len(d.b)-d.i < len(s) || string(d.b[d.i:d.i+len(s)]) != s {
		return errNotJSON
	}
	d.i += len(s)
	return nil
}

func (d *decoder) enter() error {
	if d.depth++; d.depth > maxDecodeDepth {
		return errNotJSON
	}
	return nil
}

func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.i++ // [
	base := len(d.stack)
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
	} else {
		for {
			d.space()
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			if !d.push(v) {
				return nil, errOverMeter
			}
			d.space()
			if d.i == len(d.b) {
				return nil, errNotJSON
			}
			c := d.b[d.i]
			d.i++
			if c == ']' {
				break
			}
			if c != ',' {
				return nil, errNotJSON
			}
		}
	}
	n := len(d.stack) - base
	if !d.m.charge(costArray + int64(n)*costSlot) {
		return nil, errOverMeter
	}
	out := make([]any, n)
	copy(out, d.stack[base:])
	clear(d.stack[base:])
	d.stack = d.stack[:base]
	d.depth--
	return out, nil
}

func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.i++ // {
	base := len(d.stack)
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
	} else {
		for {
			d.space()
			if d.i == len(d.b) || d.b[d.i] != '"' {
				return nil, errNotJSON
			}
			k, err := d.str()
			if err != nil {
				return nil, err
			}
			d.space()
			if d.i == len(d.b) || d.b[d.i] != ':' {
				return nil, errNotJSON
			}
			d.i++
			d.space()
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			if !d.m.charge(costKeyBytes+int64(len(k))) || !d.push(k) || !d.push(v) {
				return nil, errOverMeter
			}
			d.space()
			if d.i == len(d.b) {
				return nil, errNotJSON
			}
			c := d.b[d.i]
			d.i++
			if c == '}' {
				break
			}
			if c != ',' {
				return nil, errNotJSON
			}
		}
	}
	cost, n := int64(costObject), int64(len(d.stack)-base)/2
	switch {
	case n > 8:
		cost += n * costEntry
	case n > 0:
		cost += costSmallMap
	}
	if !d.m.charge(cost) {
		return nil, errOverMeter
	}
	kv := d.stack[base:]
	out := make(map[string]any, len(kv)/2)
	for j := 0; j < len(kv); j += 2 {
		out[kv[j].(string)] = kv[j+1]
	}
	clear(kv)
	d.stack = d.stack[:base]
	d.depth--
	return out, nil
}

// number reads a number as the JSON grammar has it, the longest that
// matches (so "01" is two numbers, as encoding/json's Decoder reads it).
func (d *decoder) number() (json.Number, error) {
	b, start := d.b, d.i
	i := start
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return "", errNotJSON
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return "", errNotJSON
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return "", errNotJSON
		}
	}
	d.i = i
	return json.Number(b[start:i]), nil
}

// str reads a string as encoding/json unquotes it: escapes decoded, an
// invalid UTF-8 byte or an unpaired surrogate read as U+FFFD, a control
// byte refused.
func (d *decoder) str() (string, error) {
	b := d.b
	i := d.i + 1
	start := i
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.i = i + 1
			return string(b[start:i]), nil
		case c == '\\' || c >= utf8.RuneSelf:
			return d.slowStr(start, i)
		case c < 0x20:
			return "", errNotJSON
		}
		i++
	}
	return "", errNotJSON
}

// slowStr finishes a string from i, where the first escape or non-ASCII
// byte is; the bytes from start are plain.
func (d *decoder) slowStr(start, i int) (string, error) {
	b := d.b
	out := append(d.buf[:0], b[start:i]...)
	defer func() { d.buf = out[:0] }()
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			d.i = i + 1
			return string(out), nil
		case c < 0x20:
			return "", errNotJSON
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, b[i:i+size]...)
			}
			i += size
			continue
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 == len(b) {
			return "", errNotJSON
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(b[i+2:])
			if r < 0 {
				return "", errNotJSON
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2 := u4(b[i:]); r2 >= 0 {
					if p := utf16.DecodeRune(r, r2); p != utf8.RuneError {
						out = utf8.AppendRune(out, p)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", errNotJSON
		}
		i += 2
	}
	return "", errNotJSON
}

// u4 reads the escape \uXXXX at the start of b, -1 when there is none.
func u4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	return hex4(b[2:])
}

// hex4 reads four hex digits, -1 when they are not.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
