package viewengine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// searchLineCap is the most bytes of one line a search holds: a line that
// spans chunks is matched whole up to this size; past it, the line is
// matched in windows of this size overlapping by LineBytes (plus a
// literal's length, so no literal match is missed; a regular expression
// match longer than LineBytes that straddles a window boundary of
// such a line is not found).
const searchLineCap = 1 << 20

// MaxPatternBytes bounds a search pattern, and a regular expression in a
// query filter.
const MaxPatternBytes = 1000

// LineBytes is the longest line a search shows whole; a longer one is cut
// to this many bytes around its match.
const LineBytes = 512

// ErrPattern is returned by NewMatcher for a regular expression that does
// not compile.
var ErrPattern = errors.New("the pattern is not a valid RE2 regular expression")

// NewMatcher prepares a search for pattern: a literal, or Go RE2 syntax
// when regex is set, regardless of case when ignoreCase is set. The error
// is ErrPattern and never repeats the pattern.
func NewMatcher(pattern string, regex, ignoreCase bool) (*Matcher, error) {
	if !regex && !ignoreCase {
		return &Matcher{lit: []byte(pattern)}, nil
	}
	if !regex && isASCII(pattern) {
		return newFoldMatcher(pattern), nil
	}
	expr := pattern
	if !regex {
		expr = regexp.QuoteMeta(expr)
	}
	if ignoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, ErrPattern
	}
	return &Matcher{re: re}, nil
}

// Matcher finds the first match in one line: a literal (fast path), an
// ASCII literal regardless of case (fold), or an RE2 expression.
type Matcher struct {
	lit  []byte // the literal; lower case when fold
	fold bool
	// anchor is the index in lit of the byte a fold search looks for
	// first (with IndexByte, in its lower and upper case).
	anchor int
	lo, up byte
	re     *regexp.Regexp
}

// Find returns the index of the first match in line, or -1.
func (m *Matcher) Find(line []byte) int {
	switch {
	case m.fold:
		return m.indexFold(line)
	case m.re == nil:
		return bytes.Index(line, m.lit)
	}
	if loc := m.re.FindIndex(line); loc != nil {
		return loc[0]
	}
	return -1
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// newFoldMatcher prepares a case-insensitive search for an ASCII literal:
// it anchors on a byte without case when the pattern has one (a digit or
// punctuation: one IndexByte scan), else on its last letter (two), and
// checks each candidate with EqualFold.
func newFoldMatcher(p string) *Matcher {
	m := &Matcher{lit: []byte(strings.ToLower(p)), fold: true, anchor: len(p) - 1}
	for i := len(p) - 1; i >= 0; i-- {
		if c := p[i]; c != ' ' && !('a' <= c|0x20 && c|0x20 <= 'z') {
			m.anchor = i
			break
		}
	}
	c := m.lit[m.anchor]
	m.lo, m.up = c, c
	if 'a' <= c && c <= 'z' {
		m.up = c - 'a' + 'A'
	}
	return m
}

// indexFold is bytes.Index regardless of ASCII case.
func (m *Matcher) indexFold(s []byte) int {
	n := len(m.lit)
	for from := m.anchor; from < len(s); {
		i := indexEither(s[from:], m.lo, m.up)
		if i < 0 {
			return -1
		}
		at := from + i - m.anchor
		if at+n <= len(s) && bytes.EqualFold(s[at:at+n], m.lit) {
			return at
		}
		from += i + 1
	}
	return -1
}

// indexEither returns the first index of a or b in s, or -1.
func indexEither(s []byte, a, b byte) int {
	i := bytes.IndexByte(s, a)
	if a == b {
		return i
	}
	if i >= 0 {
		s = s[:i]
	}
	if j := bytes.IndexByte(s, b); j >= 0 {
		return j
	}
	return i
}

// overlap is how many bytes of a window are kept when a long line is
// matched in windows: enough that no literal match straddling two windows
// is missed, and that a match found later still shows LineBytes of
// what precedes it.
func (m *Matcher) overlap() int {
	if m.re == nil {
		return LineBytes + len(m.lit) - 1
	}
	return LineBytes
}

// shownLine is one line as the answer shows it: at most LineBytes of
// its raw bytes (a window around the match of a longer line).
type shownLine struct {
	no      int64
	match   bool
	length  int64  // the whole line's length, LF excluded
	winOff  int64  // body offset of the window
	win     []byte // raw bytes shown
	cutLine bool   // the window is not the whole line
}

// searchScan runs a Matcher over every line, counts every matching line,
// and builds the answer of the matches [skip+1, skip+limit] while it fits.
type searchScan struct {
	m      *Matcher
	ctxN   int
	skip   int64
	limit  int64
	page   pager
	fast   bool // literal without context: search whole chunks
	line   int64
	lstart int64 // body offset of the current line

	// The current line when it spans chunks.
	cur      []byte
	curBase  int64 // line offset of cur[0]
	curMatch int64 // line offset of the first match, -1 none
	curWin   shownLine
	head     []byte // the first LineBytes of a line longer than the cap

	lineCap int // searchLineCap; smaller in tests

	ring    []shownLine // the last ctxN lines, for before-context
	after   int         // context lines still to show after a match
	printed int64       // last line number put into the answer
	item    []byte      // the item being built
	inItem  bool
}

// NewSearch returns the scanner of the search view: the lines matching m,
// with ctxN lines of context, the matches [skip+1, skip+limit] while the
// answer fits budget bytes.
func NewSearch(m *Matcher, ctxN int, skip, limit, budget int64) Scanner {
	return newSearchScan(m, ctxN, skip, limit, budget)
}

func newSearchScan(m *Matcher, ctxN int, skip, limit, budget int64) *searchScan {
	return &searchScan{m: m, ctxN: ctxN, skip: skip, limit: limit, line: 1, curMatch: -1, lineCap: searchLineCap,
		fast: m.re == nil && ctxN == 0, page: pager{budget: budget, noun: "matches"}}
}

// Scan implements Scanner.
func (s *searchScan) Scan(off int64, b []byte) error {
	for len(b) > 0 {
		if len(s.cur) > 0 || s.curBase > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				s.extend(b)
				return nil
			}
			s.extend(b[:i])
			s.endCarried()
			off += int64(i + 1)
			b = b[i+1:]
			continue
		}
		if s.fast && !s.inItem {
			j := s.m.Find(b)
			if j < 0 {
				// No match starts in b: pass its whole lines and carry the
				// last, partial one (a match may straddle the chunks).
				b, off = s.passLines(b, off, len(b))
				if len(b) > 0 {
					s.lstart = off
					s.extend(b)
				}
				return nil
			}
			b, off = s.passLines(b, off, j)
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.lstart = off
			s.extend(b)
			return nil
		}
		s.lineDone(b[:i], off, s.m.Find(b[:i]))
		off += int64(i + 1)
		b = b[i+1:]
	}
	return nil
}

// passLines passes over the whole lines that end before b[upto] (none of
// them matches) and returns the rest, starting at a line start.
func (s *searchScan) passLines(b []byte, off int64, upto int) ([]byte, int64) {
	k := bytes.LastIndexByte(b[:upto], '\n')
	if k < 0 {
		return b, off
	}
	s.line += int64(bytes.Count(b[:k+1], nl))
	return b[k+1:], off + int64(k+1)
}

// extend adds bytes of a line that spans chunks, matching it in windows
// once it outgrows searchLineCap.
func (s *searchScan) extend(b []byte) {
	for len(b) > 0 {
		room := s.lineCap - len(s.cur)
		if room <= 0 {
			s.slide()
			continue
		}
		k := min(room, len(b))
		s.cur = append(s.cur, b[:k]...)
		b = b[k:]
	}
}

// slide matches the full window (when no match was found yet) and keeps
// only the overlap.
func (s *searchScan) slide() {
	if s.curBase == 0 {
		s.head = append(s.head[:0], s.cur[:min(len(s.cur), LineBytes)]...)
	}
	if s.curMatch < 0 {
		if j := s.m.Find(s.cur); j >= 0 {
			s.curMatch = s.curBase + int64(j)
			s.curWin = s.window(s.cur, s.curBase, s.curMatch, -1)
			s.curWin.win = append([]byte(nil), s.curWin.win...)
		}
	}
	keep := 0
	if s.curMatch < 0 {
		keep = s.m.overlap()
	}
	if keep > len(s.cur) {
		keep = len(s.cur)
	}
	drop := len(s.cur) - keep
	copy(s.cur, s.cur[drop:])
	s.cur = s.cur[:keep]
	s.curBase += int64(drop)
}

// endCarried finishes the line held in cur.
func (s *searchScan) endCarried() {
	length := s.curBase + int64(len(s.cur))
	if s.curBase == 0 {
		s.lineDone(s.cur, s.lstart, s.m.Find(s.cur))
	} else {
		if s.curMatch < 0 {
			if j := s.m.Find(s.cur); j >= 0 {
				s.curMatch = s.curBase + int64(j)
				s.curWin = s.window(s.cur, s.curBase, s.curMatch, -1)
			}
		}
		sl := s.curWin
		if s.curMatch < 0 { // a context line: its start
			sl = shownLine{win: s.head}
		}
		sl.length, sl.cutLine = length, true
		sl.winOff += s.lstart
		s.emit(sl, s.curMatch >= 0)
	}
	s.cur, s.curBase, s.curMatch = s.cur[:0], 0, -1
	s.curWin = shownLine{}
}

// lineDone handles one whole line (LF excluded) at body offset off; at is
// the offset of its first match or -1.
func (s *searchScan) lineDone(line []byte, off int64, at int) {
	if at < 0 && s.ctxN == 0 && !s.inItem {
		s.line++
		return
	}
	sl := s.window(line, 0, int64(at), int64(len(line)))
	sl.winOff += off
	s.emit(sl, at >= 0)
}

// window cuts line (whose first byte is at line offset base) to at most
// LineBytes raw bytes around at (or from its start when at < 0).
// length < 0 means the line's length is not known yet. winOff is the line
// offset of the window.
func (s *searchScan) window(line []byte, base, at, length int64) shownLine {
	sl := shownLine{length: length}
	from := int64(0)
	if at >= 0 {
		from = max(0, at-base-LineBytes/4)
	}
	to := min(int64(len(line)), from+LineBytes)
	from = max(0, min(from, to-LineBytes))
	sl.win = line[from:to] // borrowed: copied where it is kept
	sl.winOff = base + from
	sl.cutLine = to-from < int64(len(line)) || base > 0
	return sl
}

// emit takes one line that matched or may be context, with its number.
func (s *searchScan) emit(sl shownLine, match bool) {
	sl.no, sl.match = s.line, match
	s.line++
	if match {
		s.page.total++
		k := s.page.total
		if k > s.skip && k <= s.skip+s.limit && !s.page.full {
			s.closeItem()
			s.openItem(sl)
			return
		}
		// A match outside the page (skipped, past max_matches, or not
		// fitting) may still be shown as another match's context: it is
		// marked as context then, so every "<n>:" line is a counted match.
		sl.match = false
	}
	if s.inItem && s.after > 0 {
		s.add(sl)
		s.after--
		if s.after == 0 {
			s.closeItem()
		}
		return
	}
	if s.ctxN > 0 {
		var buf []byte
		if len(s.ring) == s.ctxN { // reuse the oldest line's buffer
			buf = s.ring[0].win[:0]
			copy(s.ring, s.ring[1:])
			s.ring = s.ring[:s.ctxN-1]
		}
		sl.win = append(buf, sl.win...)
		s.ring = append(s.ring, sl)
	}
}

func (s *searchScan) openItem(sl shownLine) {
	s.inItem, s.after = true, s.ctxN
	s.item = s.item[:0]
	first := sl.no
	for _, r := range s.ring {
		if r.no > s.printed {
			first = min(first, r.no)
		}
	}
	if s.ctxN > 0 && s.printed > 0 && first > s.printed+1 {
		s.item = append(s.item, "--\n"...)
	}
	for _, r := range s.ring {
		if r.no > s.printed {
			s.add(r)
		}
	}
	s.ring = s.ring[:0]
	s.add(sl)
	if s.after == 0 {
		s.closeItem()
	}
}

func (s *searchScan) add(sl shownLine) {
	s.item = appendShown(s.item, sl)
	s.printed = sl.no
}

func (s *searchScan) closeItem() {
	if !s.inItem {
		return
	}
	s.inItem = false
	s.page.offer(s.item)
}

// Answer implements Scanner.
func (s *searchScan) Answer(_ context.Context, _ int64) Answer {
	if len(s.cur) > 0 || s.curBase > 0 {
		s.endCarried()
	}
	s.closeItem()
	return s.page.answer(s.skip)
}

// appendShown renders one line: "<n>:<text>" for a match, "<n>-<text>" for
// context; a cut line says where its window lies in the body; invalid UTF-8
// becomes U+FFFD.
func appendShown(dst []byte, sl shownLine) []byte {
	dst = strconv.AppendInt(dst, sl.no, 10)
	if sl.match {
		dst = append(dst, ':')
	} else {
		dst = append(dst, '-')
	}
	win := bytes.TrimSuffix(sl.win, []byte{'\r'})
	if sl.cutLine {
		dst = fmt.Appendf(dst, "[line of %d bytes cut to %d bytes at offset %d] ", sl.length, len(sl.win), sl.winOff)
		win = sl.win
	}
	dst = append(dst, strings.ToValidUTF8(string(win), "\uFFFD")...)
	return append(dst, '\n')
}
