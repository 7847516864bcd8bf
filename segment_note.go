package hybridctx

import "github.com/hybridctx/hybridctx/artifact"

// MaxSegmentNoteBytes bounds the note Segment.WithNote appends.
const MaxSegmentNoteBytes = 512

// WithNote returns a segment whose bytes are s's followed by an LF and
// note, for a host that hands the model one text holding both the
// verified bytes and the read tool's continuation note. It is still a
// recovered segment (never offloaded again). A note longer than
// MaxSegmentNoteBytes is cut there on a rune boundary; an empty note
// returns s.
func (s *Segment) WithNote(note string) *Segment {
	if note == "" || s == nil || !s.valid {
		return s
	}
	note = artifact.TruncateUTF8(note, MaxSegmentNoteBytes)
	body := make([]byte, 0, len(s.body)+1+len(note))
	body = append(append(append(body, s.body...), '\n'), note...)
	c := *s
	c.body = body
	return &c
}
