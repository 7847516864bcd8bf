// Package workload is the benchmark workload of `hybridctx-bench`: a
// sequence of tool results (Item), its JSON Lines form (Reader, Writer), a
// seeded generator (Generate) and a runner (Run) that sends every result
// through the agent-loop seam — agent.Middleware inside an loop.Loop
// driven by a scripted model, and the read_artifact tool for rehydrations —
// and measures what happened.
//
// # JSON Lines form
//
// One tool result per line, as one JSON object:
//
//	{"session": "...", "tool": "...", "call_id": "...", "content": "..."}
//
// or with "content_base64" (standard encoding, padded) instead of "content"
// for bytes that are not valid UTF-8. session and tool are required;
// call_id may be empty. Exactly one of content and content_base64 must be
// present. Other keys are ignored, so a workload may carry annotations of
// its own (a "kind", say); a misspelt content key shows as a missing one.
// Blank lines are skipped. Items are replayed in file order; results of
// one session keep their order, sessions run side by side.
package workload

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx/artifact"
)

// Item is one tool result of a workload.
type Item struct {
	// Session names the conversation the result belongs to; all sessions
	// share one workspace, under one user and workflow.
	Session string
	// Tool is the tool's name: 1 to MaxToolNameLen bytes of [A-Za-z0-9_.-].
	Tool string
	// CallID is the call's id, as the model gave it; it may be empty.
	CallID string
	// Content is the result, byte for byte.
	Content []byte
}

// Source yields the items of a workload in order. Next returns io.EOF after
// the last one.
type Source interface {
	Next() (Item, error)
}

// Errors of the JSON Lines form. A *LineError wraps one of them.
var (
	// ErrSyntax means a line is not one JSON object of the expected shape.
	ErrSyntax = errors.New("workload: malformed line")
	// ErrField means a field is missing, empty or invalid.
	ErrField = errors.New("workload: invalid field")
	// ErrLineTooLong means a line is longer than ReaderOptions.MaxLineBytes.
	ErrLineTooLong = errors.New("workload: line too long")
)

// LineError says which line of a workload file is wrong and why. It never
// repeats the line's content.
type LineError struct {
	// Line is the 1-based line number.
	Line int
	// Err wraps ErrSyntax, ErrField or ErrLineTooLong.
	Err error
}

// Error implements error.
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// DefaultMaxLineBytes bounds a line unless ReaderOptions sets another:
// enough for a 64 MiB result in base64.
const DefaultMaxLineBytes = 96 << 20

// ReaderOptions tune a Reader. The zero value means defaults.
type ReaderOptions struct {
	// MaxLineBytes bounds one line, newline excluded; 0 means
	// DefaultMaxLineBytes.
	MaxLineBytes int
}

// Reader reads a workload in its JSON Lines form. It holds one line in
// memory at a time.
type Reader struct {
	lines
	err error
}

// lines reads a file line by line, one line in memory at a time, each at
// most max bytes.
type lines struct {
	r    *bufio.Reader
	max  int
	line int
	buf  []byte
}

func newLines(r io.Reader, max int) lines {
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	return lines{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader, opts *ReaderOptions) *Reader {
	var max int
	if opts != nil {
		max = opts.MaxLineBytes
	}
	return &Reader{lines: newLines(r, max)}
}

// wireItem is the JSON shape of one line.
type wireItem struct {
	Session       *string `json:"session"`
	Tool          *string `json:"tool"`
	CallID        *string `json:"call_id"`
	Content       *string `json:"content,omitempty"`
	ContentBase64 *string `json:"content_base64,omitempty"`
}

// Next returns the next item, io.EOF at the end, or an error: a *LineError
// for a bad line (after which Next keeps returning it), or the underlying
// reader's error.
func (r *Reader) Next() (Item, error) {
	for r.err == nil {
		line, err := r.readLine()
		if err != nil {
			r.err = err
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		it, err := parseLine(line)
		if err != nil {
			r.err = &LineError{Line: r.line, Err: err}
			break
		}
		return it, nil
	}
	return Item{}, r.err
}

// readLine returns the next line without its newline (and a trailing CR),
// io.EOF when there is none.
func (r *lines) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	r.line++
	tooLong := func() error {
		return &LineError{Line: r.line, Err: fmt.Errorf("%w: more than %d bytes", ErrLineTooLong, r.max)}
	}
	for {
		chunk, err := r.r.ReadSlice('\n')
		if len(r.buf)+len(chunk) > r.max+2 { // room for "\r\n"
			return nil, tooLong()
		}
		r.buf = append(r.buf, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(r.buf) > 0:
		case err != nil:
			return nil, err
		}
		line := bytes.TrimSuffix(bytes.TrimSuffix(r.buf, []byte("\n")), []byte("\r"))
		if len(line) > r.max {
			return nil, tooLong()
		}
		return line, nil
	}
}

// parseLine decodes one line into an Item.
func parseLine(line []byte) (Item, error) {
	if !utf8.Valid(line) {
		// encoding/json would replace the bad bytes silently.
		return Item{}, fmt.Errorf("%w: not valid UTF-8 (put such bytes in content_base64)", ErrSyntax)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	var w wireItem
	if err := dec.Decode(&w); err != nil {
		return Item{}, fmt.Errorf("%w: %s", ErrSyntax, jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return Item{}, fmt.Errorf("%w: more than one value on the line", ErrSyntax)
	}
	switch {
	case w.Session == nil || w.Tool == nil:
		return Item{}, fmt.Errorf("%w: session and tool are required", ErrField)
	case (w.Content == nil) == (w.ContentBase64 == nil):
		return Item{}, fmt.Errorf("%w: exactly one of content and content_base64 is required", ErrField)
	}
	it := Item{Session: *w.Session, Tool: *w.Tool}
	if w.CallID != nil {
		it.CallID = *w.CallID
	}
	if w.Content != nil {
		it.Content = []byte(*w.Content)
	} else {
		b, err := base64.StdEncoding.DecodeString(*w.ContentBase64)
		if err != nil {
			return Item{}, fmt.Errorf("%w: content_base64 is not standard padded base64", ErrField)
		}
		it.Content = b
	}
	if err := it.Validate(); err != nil {
		return Item{}, err
	}
	return it, nil
}

// jsonProblem describes a decoding error without quoting input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be a string", te.Field)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "incomplete JSON object"
	}
	return "not an object with session, tool and content or content_base64"
}

// MaxToolNameLen bounds Item.Tool: the longest tool name a record of every
// workspace backend stores.
const MaxToolNameLen = artifact.MaxCallFieldLen

// MaxCallIDLen bounds Item.CallID: the longest call id a record of every
// workspace backend stores.
const MaxCallIDLen = artifact.MaxCallFieldLen

// Validate checks the item's fields: a session that is a valid owner field,
// a tool name of 1 to MaxToolNameLen bytes of [A-Za-z0-9_.-] and a call id
// of valid UTF-8 of at most MaxCallIDLen bytes. The error wraps ErrField.
func (it Item) Validate() error {
	o := artifact.Owner{User: "u", Workflow: "w", Session: it.Session}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: session: %w", ErrField, err)
	}
	if !validToolName(it.Tool) {
		return fmt.Errorf("%w: tool must be 1 to %d bytes of A-Z, a-z, 0-9, '_', '.', '-'", ErrField, MaxToolNameLen)
	}
	if len(it.CallID) > MaxCallIDLen || !utf8.ValidString(it.CallID) {
		return fmt.Errorf("%w: call_id must be valid UTF-8 of at most %d bytes", ErrField, MaxCallIDLen)
	}
	return nil
}

func validToolName(s string) bool {
	if len(s) == 0 || len(s) > MaxToolNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// Writer writes items in the JSON Lines form: "content" when the bytes are
// valid UTF-8, "content_base64" otherwise, so every item reads back byte
// for byte.
type Writer struct {
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: w}
	wr.enc = json.NewEncoder(&wr.buf)
	wr.enc.SetEscapeHTML(false)
	return wr
}

// Write writes one item as one line. An invalid item is an error wrapping
// ErrField and writes nothing.
func (w *Writer) Write(it Item) error {
	if err := it.Validate(); err != nil {
		return err
	}
	v := wireItem{Session: &it.Session, Tool: &it.Tool, CallID: &it.CallID}
	if utf8.Valid(it.Content) {
		s := string(it.Content)
		v.Content = &s
	} else {
		s := base64.StdEncoding.EncodeToString(it.Content)
		v.ContentBase64 = &s
	}
	w.buf.Reset()
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	_, err := w.w.Write(w.buf.Bytes())
	return err
}
