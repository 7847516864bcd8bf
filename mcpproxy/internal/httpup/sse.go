package httpup

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// The event streams of an HTTP upstream, read one event at a time below the
// SDK (see large.go) and handed to it rebuilt: each event's
// fields other than data (id, event, retry) first, then its data — the
// message, or the placeholder that replaced it — one line per line;
// comments are dropped. Lines end with LF or CRLF, as the SDK reads them.

// maxEventFields bounds the bytes of an event's fields other than data that
// are kept; longer ones are dropped.
const maxEventFields = 64 << 10

// sseBody is an event stream, handed to the SDK one rebuilt event at a time.
type sseBody struct {
	st     *largeState
	br     *bufio.Reader
	src    io.Closer
	out    []byte
	err    error
	check  bool            // refuse a message event that is not JSON-RPC, and a foreign endpoint
	callID json.RawMessage // the id of the request whose answer this stream carries
}

func (b *sseBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.out, b.err = b.event()
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

func (b *sseBody) Close() error { return b.src.Close() }

// event reads the next event and returns it rebuilt, its data replaced by a
// placeholder when the message was streamed or refused.
func (b *sseBody) event() ([]byte, error) {
	d := &eventData{br: b.br}
	msg, raw, err := b.st.message(d)
	if err == nil {
		err = d.err
	}
	if err != nil {
		return nil, err
	}
	if !d.lines {
		return nil, io.EOF
	}
	if b.check {
		switch name := eventName(d.fields); {
		case name == "endpoint" && b.st.endpointOK != nil && !b.st.endpointOK(msg):
			b.st.endpointRefused.Store(true)
			return nil, ErrEndpoint
		case (name == "" || name == "message") && raw && len(msg) > 0:
			msg = b.st.checked(msg, b.callID)
		}
	}
	out := d.fields
	if len(msg) > 0 {
		for line := range bytes.SplitSeq(msg, []byte{'\n'}) {
			out = append(append(append(out, "data: "...), line...), '\n')
		}
	}
	out = append(out, '\n')
	if d.eof {
		return out, io.EOF
	}
	return out, nil
}

// eventName returns the value of the last event field among an event's
// field lines ("" when none).
func eventName(fields []byte) string {
	name := ""
	for line := range bytes.SplitSeq(fields, []byte{'\n'}) {
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if v, ok := bytes.CutPrefix(line, []byte("event")); ok {
			switch {
			case len(v) == 0:
				name = ""
			case v[0] == ':':
				name = string(bytes.TrimSpace(v[1:])) // as the SDK reads it
			}
		}
	}
	return name
}

// eventData reads the data of one event (its data lines joined by '\n'),
// keeping its other fields, up to the blank line that ends it.
type eventData struct {
	br     *bufio.Reader
	fields []byte // the other fields, as lines
	lines  bool   // a line of the event was read
	inData bool   // inside a data line's value
	joined bool   // a data line was read: the next one is joined with '\n'
	ended  bool   // the event ended
	eof    bool   // the stream ended
	err    error  // the stream's error other than its end
}

func (d *eventData) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for !d.ended {
		if !d.inData {
			if n := d.startLine(p); n > 0 {
				return n, nil
			}
			continue
		}
		if n := d.value(p); n > 0 {
			return n, nil
		}
	}
	if d.err != nil {
		return 0, d.err
	}
	return 0, io.EOF
}

// startLine reads the start of a line: a data line's field name (returning
// the '\n' that joins it to the previous data line, if any), or a whole
// line of another kind.
func (d *eventData) startLine(p []byte) int {
	if _, err := d.br.Peek(1); err != nil {
		d.end(err)
		return 0
	}
	var head []byte
	// Enough of the line to tell its kind: 6 bytes, or up to its end.
	for {
		head, _ = d.br.Peek(d.br.Buffered())
		if len(head) >= 6 || bytes.IndexByte(head, '\n') >= 0 {
			break
		}
		if more, err := d.br.Peek(len(head) + 1); err != nil {
			head = more
			break
		}
	}
	d.lines = true
	switch {
	case head[0] == '\n':
		_, _ = d.br.Discard(1)
		d.ended = true
		return 0
	case bytes.HasPrefix(head, []byte("\r\n")):
		_, _ = d.br.Discard(2)
		d.ended = true
		return 0
	case bytes.HasPrefix(head, []byte("data:")) || bytes.Equal(head, []byte("data")) ||
		bytes.HasPrefix(head, []byte("data\n")) || bytes.HasPrefix(head, []byte("data\r\n")) ||
		bytes.Equal(head, []byte("data\r")): // at the stream's end, a CR that starts the line ending
		skip := 4 // "data" alone is a data line with an empty value
		if len(head) > 4 && head[4] == ':' {
			skip = 5
			if len(head) > 5 && head[5] == ' ' {
				skip = 6
			}
		}
		_, _ = d.br.Discard(skip)
		d.inData = true
		if d.joined {
			p[0] = '\n'
			return 1
		}
		d.joined = true
		return 0
	}
	d.otherLine(head[0] == ':')
	return 0
}

// otherLine reads a line that is not data: kept when a field (within
// maxEventFields), dropped when a comment.
func (d *eventData) otherLine(comment bool) {
	keep := !comment
	start := len(d.fields)
	for {
		chunk, err := d.br.ReadSlice('\n')
		if keep {
			d.fields = append(d.fields, chunk...)
			if len(d.fields) > maxEventFields {
				d.fields, keep = d.fields[:start], false
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if keep && len(d.fields) > start {
				d.fields = append(d.fields, '\n')
			}
			d.end(err)
		}
		return
	}
}

// value copies the next bytes of a data line's value into p; at the line's
// end it consumes the line ending (LF or CRLF) and may return 0.
func (d *eventData) value(p []byte) int {
	if _, err := d.br.Peek(1); err != nil {
		d.end(err)
		return 0
	}
	buf, _ := d.br.Peek(d.br.Buffered())
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		line := bytes.TrimSuffix(buf[:i], []byte{'\r'})
		if len(line) <= len(p) {
			_, _ = d.br.Discard(i + 1)
			d.inData = false
			return copy(p, line)
		}
		n := copy(p, line)
		_, _ = d.br.Discard(n)
		return n
	}
	if buf[len(buf)-1] == '\r' { // it may start the line ending
		if len(buf) > 1 {
			buf = buf[:len(buf)-1]
		} else {
			two, _ := d.br.Peek(2)
			if len(two) < 2 || two[1] == '\n' {
				_, _ = d.br.Discard(len(two))
				d.inData = false
				return 0
			}
			buf = two[:1] // a lone CR; Peek may have moved the buffer
		}
	}
	n := copy(p, buf)
	_, _ = d.br.Discard(n)
	return n
}

// end ends the event at the stream's end or error.
func (d *eventData) end(err error) {
	d.ended, d.eof = true, true
	if err != nil && !errors.Is(err, io.EOF) {
		d.err = err
	}
}
