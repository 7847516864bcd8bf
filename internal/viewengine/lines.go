package viewengine

import (
	"bytes"
	"context"
	"math"
)

// linesScan collects the exact bytes of lines [start, end) while they fit
// the budget, and counts every line of the body. A line is the bytes up to
// and including an LF, or the bytes after the last LF. It keeps at most
// budget bytes.
type linesScan struct {
	start, end int64 // requested lines, 1-based, end exclusive
	budget     int64

	line      int64 // number of the line at the scan position
	lineStart int64 // its body offset
	lfs       int64
	size      int64
	lastLF    bool

	buf       []byte
	committed int   // bytes of whole lines in buf
	firstOff  int64 // body offset of the start line (-1 until reached)
	startLen  int64 // its length so far
	cut       bool  // a requested line did not fit
	cutLine   int64
}

// NewLines returns the scanner of the lines view: count lines from start
// (1-based), as many whole ones as fit budget bytes.
func NewLines(start, count, budget int64) Scanner {
	end := start + count
	if end < start { // overflow: to the end of the body
		end = math.MaxInt64
	}
	return &linesScan{start: start, end: end, budget: budget, line: 1, firstOff: -1}
}

// Scan implements Scanner.
func (s *linesScan) Scan(off int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	s.size += int64(len(b))
	s.lastLF = b[len(b)-1] == '\n'
	for len(b) > 0 {
		wanted := s.line >= s.start && s.line < s.end && (!s.cut || s.line == s.start)
		if !wanted {
			if s.line >= s.start { // past the wanted lines: only count
				n := int64(bytes.Count(b, nl))
				s.lfs += n
				s.line += n
				return nil
			}
			b, off = s.skipTo(b, off)
			continue
		}
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i+1]
		}
		if s.line == s.start {
			if s.firstOff < 0 {
				s.firstOff = s.lineStart
			}
			s.startLen += int64(len(seg))
		}
		if !s.cut {
			if int64(len(s.buf)+len(seg)) <= s.budget {
				s.buf = append(s.buf, seg...)
			} else {
				s.cut, s.cutLine = true, s.line
				s.buf = s.buf[:s.committed]
			}
		}
		off += int64(len(seg))
		b = b[len(seg):]
		if i >= 0 {
			s.newLine(off)
			if !s.cut {
				s.committed = len(s.buf)
			}
		}
	}
	return nil
}

var nl = []byte{'\n'}

// skipTo passes over whole lines until the start line, or the end of b.
func (s *linesScan) skipTo(b []byte, off int64) ([]byte, int64) {
	need := s.start - s.line
	if n := int64(bytes.Count(b, nl)); n < need {
		s.lfs += n
		s.line += n
		if n > 0 {
			s.lineStart = off + int64(bytes.LastIndexByte(b, '\n')) + 1
		}
		return nil, off + int64(len(b))
	}
	for ; need > 0; need-- {
		i := bytes.IndexByte(b, '\n')
		off += int64(i + 1)
		b = b[i+1:]
		s.newLine(off)
	}
	return b, off
}

func (s *linesScan) newLine(next int64) {
	s.lfs++
	s.line++
	s.lineStart = next
}

// Answer implements Scanner.
func (s *linesScan) Answer(_ context.Context, _ int64) Answer {
	total := s.lfs
	if s.size > 0 && !s.lastLF {
		total++
	}
	if !s.cut {
		s.committed = len(s.buf) // a last line without LF is whole too
	}
	p := Page{Total: total, First: s.start}
	if s.cut && s.committed == 0 {
		p.LineOffset, p.LineLength = s.firstOff, s.startLen
		return Answer{Outcome: OverBudget, Observed: s.startLen, Page: p}
	}
	last := min(s.end, total+1) // first line not returned
	if s.cut {
		last, p.Next = s.cutLine, s.cutLine
	}
	p.Count = max(0, last-s.start)
	off := max(s.firstOff, 0)
	if s.firstOff < 0 {
		off = s.size
	}
	body := s.buf[:s.committed:s.committed]
	return Answer{Outcome: Resolved, Body: body, Offset: off, Observed: int64(len(body)), Page: p}
}
