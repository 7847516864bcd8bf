package classify

import (
	"unicode/utf8"

	"github.com/hybridctx/hybridctx/internal/jsonstream"
)

// Shape records the outline of a JSON document while the document streams
// past, for the notice that stands in for it (see docs/offload.md, "The
// notice"): the top-level type, the keys of objects with the types of their
// values, and array lengths, two levels of keys deep, for example
//
//	{"items": array[400] of {"id": number, "v": string}, "next": null}
//
// It is an [io.Writer] fed the same bytes as a [Classifier], split
// anywhere, and reaches the same outline however the bytes were split; or
// it is fed by the Classifier itself, from the Classifier's own JSON scan
// ([Classifier.WriteOutline]). It
// reads at most the first [JSONScanLimit] bytes, the prefix a long stream is
// classified from: an array or object still open there is shown as such
// (array[≥N], a trailing …). Its memory is a fixed-size struct and Write
// does not allocate.
//
// Shape reads the bytes with the module's JSON tokenizer
// (internal/jsonstream's Tokenizer), watching the events of the levels it
// records, and stops at the first syntax error; whether the bytes are JSON
// is the Classifier's to say, and a caller shows a shape only for a stream
// classified [JSON].
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
	n       int64 // bytes read
	done    bool  // reading stopped: the value ended, the limit, or not JSON
	started bool  // the tokenizer watches its first events
	inKey   bool  // inside a key of a recorded object
	skip    int32 // level of the container whose contents are not recorded, or -1
	shut    int16 // node closed when that container ends, or -1
	nf      int8  // frames in use
	nn      int16 // nodes in use
	na      uint16
	tok     jsonstream.Tokenizer // unused when the Classifier feeds it (Classifier.WriteOutline)
	fr      [maxShapeFrames]shapeFrame
	nodes   [maxShapeNodes]shapeNode
	arena   [shapeArena]byte
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
		s.scan(&s.tok, p[:room])
		s.n += room
		s.done = true
		return len(p), nil
	}
	s.scan(&s.tok, p)
	s.n += int64(len(p))
	return len(p), nil
}

// watch sets what tok reports: every event of the recorded levels (the
// members of the innermost recorded container, and its end); only the end
// of a container whose contents are not recorded; nothing once reading
// stopped.
func (s *Shape) watch(tok *jsonstream.Tokenizer) {
	switch {
	case s.done:
		tok.Watch(0, 0)
	case s.skip >= 0:
		tok.Watch(jsonstream.StopValueEnd, int(s.skip))
	default:
		tok.Watch(jsonstream.StopValue|jsonstream.StopValueEnd|jsonstream.StopKey|jsonstream.StopKeyEnd, int(s.nf))
	}
}

// scan advances the recorder over p with tok, and returns the bytes tok
// consumed: all of p, or those up to where reading stopped, after which
// tok watches nothing.
func (s *Shape) scan(tok *jsonstream.Tokenizer, p []byte) int {
	if !s.started {
		s.started, s.skip = true, -1
		s.watch(tok)
	}
	all := len(p)
	for len(p) > 0 && !s.done {
		n, ev := tok.Scan(p)
		if s.inKey {
			k := p[:n]
			if ev == jsonstream.KeyEnd {
				k = k[:n-1] // the closing quote
			}
			s.keep(k)
		}
		switch ev {
		case jsonstream.Bad:
			s.done = true
		case jsonstream.Value:
			var f *shapeFrame
			if s.nf > 0 {
				f = &s.fr[s.nf-1]
			}
			s.value(f, p[n-1])
		case jsonstream.Key:
			f := &s.fr[s.nf-1]
			f.keyOK = f.expanded && s.nn < maxShapeNodes && int(s.na) < len(s.arena)
			f.keyCut, f.keyOff, f.keyLen = false, s.na, 0
			s.inKey = true
		case jsonstream.KeyEnd:
			s.inKey = false
		case jsonstream.ValueEnd:
			switch level := int32(tok.Level()); {
			case level == s.skip:
				if s.shut >= 0 {
					s.nodes[s.shut].closed = true
				}
				s.skip = -1
				s.done = s.nf == 0
			case level == int32(s.nf)-1:
				s.close()
			}
		}
		if ev != jsonstream.None {
			s.watch(tok)
		}
		p = p[n:]
	}
	return all - len(p)
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
	default: // 'n'
		typ = 'z'
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
	switch {
	case typ == '{' || typ == '[':
		s.open(f, node, typ == '{')
	case f == nil:
		s.done = true // a top-level scalar: its type is all there is
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

// open begins a container with node (-1 for none) inside f: a frame whose
// members are watched, or, for one whose contents are not recorded, a
// skip to its end.
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
		s.skip, s.shut = int32(s.nf), node
		return
	}
	s.nodes[node].expanded = expanded
	s.fr[s.nf] = shapeFrame{node: node, obj: obj, expanded: expanded, lvl: lvl}
	s.nf++
}

// close ends the innermost recorded container.
func (s *Shape) close() {
	s.nf--
	s.nodes[s.fr[s.nf].node].closed = true
	if s.nf == 0 {
		s.done = true
	}
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
// between its quotes: valid escapes and runes as they are, except the runes
// hiddenRune names, written as their \uXXXX escape; anything else as
// \ufffd, so the result is valid UTF-8 and a valid JSON string with no raw
// control, line break or direction override; … inside the quotes when the
// key was cut.
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
			case hiddenRune(r):
				b = appendRuneEscape(b, r)
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

// hiddenRune reports whether r, valid inside a JSON string, must not reach
// a notice raw: the C1 controls (U+0080–U+009F, NEL among them), the line
// and paragraph separators (U+2028, U+2029) and the bidirectional marks,
// embeddings, overrides and isolates (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069), which break lines or reorder the text
// around them where the notice is shown.
func hiddenRune(r rune) bool {
	switch {
	case 0x80 <= r && r <= 0x9f, r == 0x2028, r == 0x2029, r == 0x061c, r == 0x200e, r == 0x200f,
		0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
		return true
	}
	return false
}

// appendRuneEscape appends the JSON escape \uXXXX of a rune of the Basic
// Multilingual Plane.
func appendRuneEscape(b []byte, r rune) []byte {
	const hexDigits = "0123456789abcdef"
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
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
