package classify

import "unicode/utf8"

// Shape records the outline of a JSON document while the document streams
// past, for the notice that stands in for it (see docs/offload.md, "The
// notice"): the top-level type, the keys of objects with the types of their
// values, and array lengths, two levels of keys deep, for example
//
//	{"items": array[400] of {"id": number, "v": string}, "next": null}
//
// It is an [io.Writer] fed the same bytes as a [Classifier], split
// anywhere, and reaches the same outline however the bytes were split. It
// reads at most the first [JSONScanLimit] bytes, the prefix a long stream is
// classified from: an array or object still open there is shown as such
// (array[≥N], a trailing …). Its memory is a fixed-size struct and Write
// does not allocate.
//
// Shape checks only as much of the grammar as it needs and stops at what
// cannot be JSON; whether the bytes are JSON is the Classifier's to say,
// and a caller shows a shape only for a stream classified [JSON].
//
// What it shows:
//   - a scalar as string, number, bool or null;
//   - an object as {"key": type, …} with its keys in document order, up to
//     two levels of keys (the members of the top-level object, and of the
//     objects that are their values); deeper objects as object;
//   - an array as array[N] of the first element's outline (arrays do not
//     count as a level of keys; from the fifth nested container on,
//     array[N] alone);
//   - … where it is cut: members beyond what it keeps, the rest of a
//     container still open where reading stopped, a long key;
//   - keys as JSON strings, their escapes kept and any byte that is not
//     valid UTF-8 written \ufffd, so that the outline is valid UTF-8
//     however it is cut.
//
// Keys are content: the outline belongs in the notice the model sees and
// nowhere else.
type Shape struct {
	n     int64 // bytes read
	st    shapeState
	done  bool // reading stopped: the value ended, the limit, or not JSON
	str   bool // skip mode: inside a string
	esc   bool // skip mode: after a backslash in a string
	skip  int32
	shut  int16 // node closed when skip mode ends, or -1
	nf    int8  // frames in use
	nn    int16 // nodes in use
	na    uint16
	fr    [maxShapeFrames]shapeFrame
	nodes [maxShapeNodes]shapeNode
	arena [shapeArena]byte
}

// MaxShapeLen is the most bytes Shape.Append adds.
const MaxShapeLen = 200

const (
	maxShapeFrames = 5   // recorded containers open at once
	expandDepth    = 4   // containers deeper than this show no contents
	maxShapeNodes  = 48  // values recorded
	shapeArena     = 512 // bytes of keys recorded
	maxShapeKey    = 48  // bytes of one key recorded
	keyLevels      = 2   // levels of keys shown
)

type shapeState uint8

const (
	shValue    shapeState = iota // a value
	shArrFirst                   // after '[': a value or ']'
	shObjFirst                   // after '{': a key or '}'
	shKey                        // after ',' in an object: a key
	shColon                      // after a key
	shAfter                      // after a value: ',' or a closer
	shKeyStr                     // inside a key
	shKeyEsc                     // after a backslash in a key
	shStr                        // inside a string value
	shStrEsc                     // after a backslash in a string value
	shScalar                     // inside a number or literal
	shSkip                       // inside a container whose contents are not recorded
)

// shapeFrame is an open container that has a node.
type shapeFrame struct {
	node     int16
	obj      bool
	expanded bool  // its members or first element get nodes
	keyOK    bool  // object: the current key was recorded
	keyCut   bool  // object: the current key was cut
	lvl      uint8 // levels of keys above its members
	keyOff   uint16
	keyLen   uint16
}

// shapeNode is one recorded value.
type shapeNode struct {
	parent   int16
	typ      byte // one of `s`, `n`, `b`, `z` (null), `{`, `[`
	closed   bool // a container whose closer was read
	more     bool // a container with members or an element not recorded
	expanded bool
	keyCut   bool
	keyOff   uint16
	keyLen   uint16
	count    int64 // array: elements begun
}

// Write feeds p to the recorder. It never fails and always returns
// len(p), nil.
func (s *Shape) Write(p []byte) (int, error) {
	if s.done || len(p) == 0 {
		return len(p), nil
	}
	if room := scanLimit - s.n; int64(len(p)) > room {
		s.scan(p[:room])
		s.n += room
		s.done = true
		return len(p), nil
	}
	s.scan(p)
	s.n += int64(len(p))
	return len(p), nil
}

func isWS(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// scan advances the recorder over p.
func (s *Shape) scan(p []byte) {
	for i := 0; i < len(p) && !s.done; {
		b := p[i]
		switch s.st {
		case shSkip:
			i = s.skipOver(p, i)
			continue
		case shStr:
			j := i
			for j < len(p) && p[j] != '"' && p[j] != '\\' && p[j] >= 0x20 {
				j++
			}
			if j == len(p) {
				return
			}
			switch p[j] {
			case '"':
				s.st = shAfter
			case '\\':
				s.st = shStrEsc
			default:
				s.done = true
			}
			i = j + 1
			continue
		case shStrEsc:
			s.st = shStr
		case shKeyStr:
			j := i
			for j < len(p) && p[j] != '"' && p[j] != '\\' && p[j] >= 0x20 {
				j++
			}
			s.keep(p[i:j])
			if j == len(p) {
				return
			}
			switch p[j] {
			case '"':
				s.st = shColon
			case '\\':
				s.keep(p[j : j+1])
				s.st = shKeyEsc
			default:
				s.done = true
			}
			i = j + 1
			continue
		case shKeyEsc:
			s.keep(p[i : i+1])
			s.st = shKeyStr
		case shScalar:
			if !isWS(b) && b != ',' && b != ']' && b != '}' {
				break
			}
			s.st = shAfter
			continue // the delimiter is read after the value
		default:
			if !isWS(b) {
				s.token(b)
			}
		}
		i++
	}
}

// token reads b, not whitespace, outside strings and scalars.
func (s *Shape) token(b byte) {
	var f *shapeFrame
	if s.nf > 0 {
		f = &s.fr[s.nf-1]
	}
	switch s.st {
	case shValue:
		s.value(f, b)
	case shArrFirst:
		if b == ']' {
			s.close()
			return
		}
		s.value(f, b)
	case shObjFirst, shKey:
		switch {
		case b == '}' && s.st == shObjFirst:
			s.close()
		case b == '"':
			s.st = shKeyStr
			f.keyOK = f.expanded && s.nn < maxShapeNodes && int(s.na) < len(s.arena)
			f.keyCut, f.keyOff, f.keyLen = false, s.na, 0
		default:
			s.done = true
		}
	case shColon:
		if b != ':' {
			s.done = true
			return
		}
		s.st = shValue
	case shAfter:
		switch {
		case f == nil:
			s.done = true // the top-level value ended
		case b == ',' && f.obj:
			s.st = shKey
		case b == ',':
			s.st = shValue
		case b == '}' && f.obj, b == ']' && !f.obj:
			s.close()
		default:
			s.done = true
		}
	}
}

// keep records the bytes of the key being read, up to maxShapeKey.
func (s *Shape) keep(k []byte) {
	f := &s.fr[s.nf-1]
	if !f.keyOK || len(k) == 0 {
		return
	}
	room := min(maxShapeKey-int(f.keyLen), len(s.arena)-int(s.na))
	if len(k) > room {
		k, f.keyCut = k[:room], true
	}
	copy(s.arena[s.na:], k)
	s.na += uint16(len(k))
	f.keyLen += uint16(len(k))
}

// value begins a value whose first byte is b, in container f (nil at the
// top level).
func (s *Shape) value(f *shapeFrame, b byte) {
	typ := byte(0)
	switch {
	case b == '{' || b == '[':
		typ = b
	case b == '"':
		typ = 's'
	case b == '-' || '0' <= b && b <= '9':
		typ = 'n'
	case b == 't' || b == 'f':
		typ = 'b'
	case b == 'n':
		typ = 'z'
	default:
		s.done = true
		return
	}
	node := int16(-1)
	switch {
	case f == nil:
		node = s.add(-1, typ, nil)
	case f.obj && f.expanded:
		if f.keyOK && s.nn < maxShapeNodes {
			node = s.add(f.node, typ, f)
		} else {
			s.nodes[f.node].more = true
		}
	case !f.obj:
		pn := &s.nodes[f.node]
		pn.count++
		if f.expanded && pn.count == 1 {
			if s.nn < maxShapeNodes {
				node = s.add(f.node, typ, nil)
			} else {
				pn.more = true
			}
		}
	}
	switch typ {
	case 's':
		s.st = shStr
	case '{', '[':
		s.open(f, node, typ == '{')
	default:
		if f == nil {
			s.done = true // a top-level scalar: its type is all there is
			return
		}
		s.st = shScalar
	}
}

// add records a value; f, when not nil, is the object whose current key
// names it.
func (s *Shape) add(parent int16, typ byte, f *shapeFrame) int16 {
	n := &s.nodes[s.nn]
	*n = shapeNode{parent: parent, typ: typ}
	if f != nil {
		n.keyOff, n.keyLen, n.keyCut = f.keyOff, f.keyLen, f.keyCut
	}
	s.nn++
	return s.nn - 1
}

// open begins a container with node (-1 for none) inside f.
func (s *Shape) open(f *shapeFrame, node int16, obj bool) {
	lvl := uint8(0)
	if f != nil {
		lvl = f.lvl
		if f.obj {
			lvl++
		}
	}
	depth := int(s.nf) + 1
	expanded := depth <= expandDepth && (!obj || lvl < keyLevels)
	if node < 0 || obj && !expanded || int(s.nf) == maxShapeFrames {
		s.st, s.skip, s.shut, s.str, s.esc = shSkip, 1, node, false, false
		return
	}
	s.nodes[node].expanded = expanded
	s.fr[s.nf] = shapeFrame{node: node, obj: obj, expanded: expanded, lvl: lvl}
	s.nf++
	if obj {
		s.st = shObjFirst
	} else {
		s.st = shArrFirst
	}
}

// close ends the innermost recorded container.
func (s *Shape) close() {
	s.nf--
	s.nodes[s.fr[s.nf].node].closed = true
	s.st = shAfter
	if s.nf == 0 {
		s.done = true
	}
}

// skipOver reads p from i in skip mode, counting brackets outside strings,
// and returns where it stopped: the end of p, or past the closer of the
// skipped container.
func (s *Shape) skipOver(p []byte, i int) int {
	for i < len(p) {
		switch {
		case s.esc:
			s.esc = false
			i++
			continue
		case s.str:
			j, c := stringStop(p, i)
			if j == len(p) {
				return j
			}
			s.str, s.esc = c != '"', c == '\\'
			i = j + 1
			continue
		}
		for i < len(p) && !structural[p[i]] {
			i++
		}
		if i == len(p) {
			return i
		}
		switch p[i] {
		case '"':
			s.str = true
		case '{', '[':
			s.skip++
		case '}', ']':
			if s.skip--; s.skip == 0 {
				if s.shut >= 0 {
					s.nodes[s.shut].closed = true
				}
				s.st = shAfter
				if s.nf == 0 {
					s.done = true
				}
				return i + 1
			}
		}
		i++
	}
	return i
}

// structural marks the bytes skip mode stops at outside strings.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// stringStop returns the index of the first quote or backslash of p at or
// after i, and that byte, or len(p) and 0.
func stringStop(p []byte, i int) (int, byte) {
	for i < len(p) && p[i] != '"' && p[i] != '\\' {
		i++
	}
	if i == len(p) {
		return i, 0
	}
	return i, p[i]
}

// Append appends the outline of what was written to dst, in at most
// min(max, MaxShapeLen) bytes of valid UTF-8, and returns the extended
// slice: dst unchanged when nothing was recorded or max is below 4. The
// outline depends only on the bytes written, not on how they were split.
func (s *Shape) Append(dst []byte, max int) []byte {
	max = min(max, MaxShapeLen)
	if s.nn == 0 || max < 4 {
		return dst
	}
	w := shapeWriter{b: dst, base: len(dst), max: max}
	w = s.render(w)
	if !w.full {
		return w.b
	}
	w.b = append(w.b, "…"...)
	for ; w.open > 0; w.open-- {
		w.b = append(w.b, '}')
	}
	return w.b
}

// render writes the recorded nodes in document order. It keeps its own
// stack of open containers rather than recursing, so that dst does not
// escape.
func (s *Shape) render(w shapeWriter) shapeWriter {
	type open struct {
		node  int16
		first bool
	}
	var stack [maxShapeFrames + 1]open
	sp := 0
	for next := int16(0); ; {
		if sp == 0 && next > 0 {
			return w
		}
		if sp > 0 {
			top := &stack[sp-1]
			n := &s.nodes[top.node]
			if next < s.nn && s.nodes[next].parent == top.node {
				c := &s.nodes[next]
				if n.typ == '[' {
					w = w.puts(" of ")
				} else {
					if !top.first {
						w = w.puts(", ")
					}
					var kb [6*maxShapeKey + 16]byte
					w = w.put(appendKey(kb[:0], s.arena[c.keyOff:c.keyOff+c.keyLen], c.keyCut))
				}
				top.first = false
			} else {
				// The container's recorded members are written: end it.
				switch {
				case n.typ == '[' && top.first && n.more:
					w = w.puts(" of ")
					w = w.cut()
				case n.typ == '{':
					if n.more || !n.closed {
						if !top.first {
							w = w.puts(", ")
						}
						w = w.cut()
					}
					w = w.closeBrace()
				}
				sp--
				continue
			}
		}
		n := &s.nodes[next]
		switch n.typ {
		case 's':
			w = w.puts("string")
		case 'n':
			w = w.puts("number")
		case 'b':
			w = w.puts("bool")
		case 'z':
			w = w.puts("null")
		case '[':
			var num [32]byte
			d := append(num[:0], "array["...)
			if !n.closed {
				d = append(d, "≥"...)
			}
			d = appendInt(d, n.count)
			w = w.put(append(d, ']'))
			stack[sp] = open{node: next, first: true}
			sp++
		case '{':
			if !n.expanded {
				w = w.puts("object")
				break
			}
			w = w.openBrace()
			stack[sp] = open{node: next, first: true}
			sp++
		}
		next++
	}
}

func appendInt(b []byte, v int64) []byte {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return append(b, d[i:]...)
		}
	}
}

// appendKey appends `"key": ` for the raw bytes of a key as they appeared
// between its quotes: valid escapes and runes as they are, anything else as
// \ufffd, so the result is valid UTF-8 and a valid JSON string; … inside the
// quotes when the key was cut.
func appendKey(b, k []byte, cut bool) []byte {
	b = append(b, '"')
	for len(k) > 0 {
		c := k[0]
		switch {
		case c == '\\':
			m := escLen(k)
			if m == 0 {
				if len(k) < 6 && cut {
					k = nil // an escape cut by the recording
					continue
				}
				b, k = append(b, `\ufffd`...), k[1:]
				continue
			}
			b, k = append(b, k[:m]...), k[m:]
		case c < 0x20 || c == '"':
			b, k = append(b, `\ufffd`...), k[1:]
		case c < utf8.RuneSelf:
			b, k = append(b, c), k[1:]
		default:
			r, m := utf8.DecodeRune(k)
			switch {
			case r != utf8.RuneError || m > 1:
				b = append(b, k[:m]...)
			case cut && !utf8.FullRune(k):
				m = len(k) // a rune cut by the recording
			default:
				b = append(b, `\ufffd`...)
			}
			k = k[m:]
		}
	}
	if cut {
		b = append(b, "…"...)
	}
	return append(b, `": `...)
}

// escLen returns the length of the valid JSON escape k begins with, or 0.
func escLen(k []byte) int {
	if len(k) < 2 {
		return 0
	}
	switch k[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(k) < 6 {
			return 0
		}
		for _, h := range k[2:6] {
			if !('0' <= h && h <= '9' || 'a' <= h|0x20 && h|0x20 <= 'f') {
				return 0
			}
		}
		return 6
	}
	return 0
}

// shapeWriter writes an outline within a bound, keeping room to end it:
// once a piece does not fit, it writes nothing more, and Append ends the
// outline with … and the closing braces still owed.
type shapeWriter struct {
	b         []byte
	base, max int
	open      int // braces opened and not closed
	full      bool
}

// fits reports whether n more bytes leave room for … and the braces owed.
func (w shapeWriter) fits(n, open int) bool {
	return len(w.b)-w.base+n+len("…")+open <= w.max
}

// The writer's methods take and return it by value, so that the bytes it
// appends to do not escape.

func (w shapeWriter) puts(s string) shapeWriter {
	if !w.full && !w.fits(len(s), w.open) {
		w.full = true
	}
	if !w.full {
		w.b = append(w.b, s...)
	}
	return w
}

func (w shapeWriter) put(s []byte) shapeWriter {
	if !w.full && !w.fits(len(s), w.open) {
		w.full = true
	}
	if !w.full {
		w.b = append(w.b, s...)
	}
	return w
}

func (w shapeWriter) openBrace() shapeWriter {
	if !w.full && !w.fits(1, w.open+1) {
		w.full = true
	}
	if !w.full {
		w.b = append(w.b, '{')
		w.open++
	}
	return w
}

// closeBrace closes a brace: always room, since every check kept it.
func (w shapeWriter) closeBrace() shapeWriter {
	if !w.full {
		w.b = append(w.b, '}')
		w.open--
	}
	return w
}

// cut marks where the outline leaves something out.
func (w shapeWriter) cut() shapeWriter { return w.puts("…") }
