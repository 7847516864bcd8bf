package readtools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/hybridctx/hybridctx"
)

// ErrInvalidArguments wraps every complaint about a read tool call's
// arguments. Its text is meant for the model: it says what was wrong and
// what is expected, and never repeats the arguments.
var ErrInvalidArguments = errors.New("invalid arguments")

// MaxArgsBytes bounds the JSON arguments of one read tool call.
const MaxArgsBytes = 4096

// ReadArgs are the decoded arguments of read_artifact: a byte range
// (offset, length) or whole lines (start_line, line_count), never both.
type ReadArgs struct {
	// Reference is the reference text, as the model gave it.
	Reference string
	// Offset and Length select a byte range; Length 0 means to the end.
	Offset, Length int64
	// StartLine (1-based) and LineCount select whole lines; StartLine 0
	// means a byte range, LineCount 0 the default count.
	StartLine, LineCount int64
	// MaxBytes is the model's own budget; 0 means it gave none.
	MaxBytes int64
}

// Lines reports whether the arguments ask for lines rather than bytes.
func (a ReadArgs) Lines() bool { return a.StartLine > 0 }

// SearchArgs are the decoded arguments of search_artifact; absent
// integers are 0 (the defaults of hybridctx.SearchRequest).
type SearchArgs struct {
	// Reference is the reference text, as the model gave it.
	Reference string
	// Pattern is a literal, or RE2 syntax when Regex is set.
	Pattern string
	// Regex and IgnoreCase are the matching modes.
	Regex, IgnoreCase bool
	// ContextLines, MaxMatches and Skip shape the page.
	ContextLines, MaxMatches, Skip int64
	// MaxBytes is the model's own budget; 0 means it gave none.
	MaxBytes int64
}

// QueryArgs are the decoded arguments of query_artifact.
type QueryArgs struct {
	// Reference is the reference text, as the model gave it.
	Reference string
	// Filter is the jq program.
	Filter string
	// Skip is the results passed over.
	Skip int64
	// MaxBytes is the model's own budget; 0 means it gave none.
	MaxBytes int64
}

// field is one argument a tool accepts: a string, a boolean or an integer
// of at least min.
type field struct {
	name string
	kind byte // 's', 'b', 'i'
	min  int64
	str  *string
	flag *bool
	num  *int64
}

// hint renders the expected shape of a tool's arguments, to end each
// argument error so the model can correct its call.
func hint(fields []field) string {
	var b bytes.Buffer
	b.WriteString(`; expected {`)
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(f.name) + ": ")
		switch f.kind {
		case 's':
			b.WriteString("string")
		case 'b':
			b.WriteString("boolean")
		default:
			b.WriteString("integer >= " + strconv.FormatInt(f.min, 10))
		}
	}
	b.WriteString(`}, only `)
	b.WriteString(fields[0].name)
	if fields[1].kind == 's' {
		b.WriteString(" and " + fields[1].name)
	}
	b.WriteString(" required")
	return b.String()
}

type argsErr struct {
	tool string
	msg  string
	hint string
}

func (e *argsErr) Error() string { return e.tool + ": invalid arguments: " + e.msg + e.hint }

// named sets the tool name an argument error speaks of.
func named(err error, tool string) error {
	var e *argsErr
	if errors.As(err, &e) {
		c := *e
		c.tool = tool
		return &c
	}
	return err
}
func (e *argsErr) Unwrap() error { return ErrInvalidArguments }

// decode parses raw as one JSON object holding only the given fields; null
// counts as absent. Unknown fields, trailing data, fractions and
// out-of-range numbers are rejected. It returns the names present.
func decode(raw json.RawMessage, tool string, fields []field) (map[string]bool, error) {
	h := hint(fields)
	fail := func(format string, a ...any) error {
		return &argsErr{tool: tool, msg: fmt.Sprintf(format, a...), hint: h}
	}
	if len(raw) > MaxArgsBytes {
		return nil, fail("the arguments are %d bytes, more than %d", len(raw), MaxArgsBytes)
	}
	if !utf8.Valid(raw) {
		return nil, fail("the arguments are not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fail("the arguments must be a JSON object")
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&obj); err != nil {
		return nil, fail("the arguments are not valid JSON")
	}
	if dec.More() || dec.InputOffset() != int64(len(trimmed)) {
		return nil, fail("unexpected data after the arguments object")
	}
	seen := map[string]bool{}
	for k, v := range obj {
		f := lookup(fields, k)
		if f == nil {
			return nil, fail("unknown field %s", quoteShort(k))
		}
		if string(v) == "null" {
			continue
		}
		switch f.kind {
		case 's':
			if json.Unmarshal(v, f.str) != nil {
				return nil, fail("%s must be a string", f.name)
			}
		case 'b':
			if json.Unmarshal(v, f.flag) != nil {
				return nil, fail("%s must be true or false", f.name)
			}
		default:
			n, err := integer(v, f.min)
			if err != "" {
				return nil, fail("%s must be %s", f.name, err)
			}
			*f.num = n
		}
		seen[k] = true
	}
	return seen, nil
}

func lookup(fields []field, name string) *field {
	for i := range fields {
		if fields[i].name == name {
			return &fields[i]
		}
	}
	return nil
}

// integer decodes a JSON integer >= min, or says what it must be.
func integer(v json.RawMessage, min int64) (int64, string) {
	var n json.Number
	if len(v) == 0 || v[0] == '"' || json.Unmarshal(v, &n) != nil {
		return 0, "an integer"
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, fmt.Sprintf("an integer between %d and %d", min, int64(1<<63-1))
	}
	if i < min {
		return 0, fmt.Sprintf(">= %d", min)
	}
	return i, ""
}

func required(seen map[string]bool, tool string, fields []field, names ...string) error {
	for _, n := range names {
		f := lookup(fields, n)
		if !seen[n] || *f.str == "" {
			return &argsErr{tool: tool, msg: n + " is required", hint: hint(fields)}
		}
	}
	return nil
}

// ParseReadArgs decodes read_artifact arguments: a string "reference" and
// either the optional integers "offset" (>= 0) and "length" (>= 0), or
// "start_line" (>= 1) and "line_count" (>= 1); "max_bytes" (>= 1) in both
// forms. Byte and line arguments together are an error. The error wraps
// ErrInvalidArguments.
func ParseReadArgs(raw json.RawMessage) (ReadArgs, error) {
	var a ReadArgs
	fields := []field{
		{name: "reference", kind: 's', str: &a.Reference},
		{name: "offset", kind: 'i', num: &a.Offset},
		{name: "length", kind: 'i', num: &a.Length},
		{name: "start_line", kind: 'i', min: 1, num: &a.StartLine},
		{name: "line_count", kind: 'i', min: 1, num: &a.LineCount},
		{name: "max_bytes", kind: 'i', min: 1, num: &a.MaxBytes},
	}
	seen, err := decode(raw, hybridctx.DefaultReadToolName, fields)
	if err == nil {
		err = required(seen, hybridctx.DefaultReadToolName, fields, "reference")
	}
	if err == nil && (seen["offset"] || seen["length"]) && (seen["start_line"] || seen["line_count"]) {
		err = &argsErr{tool: hybridctx.DefaultReadToolName, msg: "offset/length (bytes) and start_line/line_count (lines) cannot be combined", hint: hint(fields)}
	}
	if err == nil && seen["line_count"] && !seen["start_line"] {
		err = &argsErr{tool: hybridctx.DefaultReadToolName, msg: "line_count needs start_line", hint: hint(fields)}
	}
	if err != nil {
		return ReadArgs{}, err
	}
	return a, nil
}

// ParseSearchArgs decodes search_artifact arguments. The error wraps
// ErrInvalidArguments.
func ParseSearchArgs(raw json.RawMessage) (SearchArgs, error) {
	var a SearchArgs
	fields := []field{
		{name: "reference", kind: 's', str: &a.Reference},
		{name: "pattern", kind: 's', str: &a.Pattern},
		{name: "regex", kind: 'b', flag: &a.Regex},
		{name: "ignore_case", kind: 'b', flag: &a.IgnoreCase},
		{name: "context_lines", kind: 'i', num: &a.ContextLines},
		{name: "max_matches", kind: 'i', min: 1, num: &a.MaxMatches},
		{name: "skip", kind: 'i', num: &a.Skip},
		{name: "max_bytes", kind: 'i', min: 1, num: &a.MaxBytes},
	}
	seen, err := decode(raw, hybridctx.DefaultSearchToolName, fields)
	if err == nil {
		err = required(seen, hybridctx.DefaultSearchToolName, fields, "reference", "pattern")
	}
	if err == nil && a.ContextLines > hybridctx.MaxContextLines {
		err = &argsErr{tool: hybridctx.DefaultSearchToolName, msg: "context_lines must be at most " + strconv.Itoa(hybridctx.MaxContextLines), hint: hint(fields)}
	}
	if err != nil {
		return SearchArgs{}, err
	}
	return a, nil
}

// ParseQueryArgs decodes query_artifact arguments. The error wraps
// ErrInvalidArguments.
func ParseQueryArgs(raw json.RawMessage) (QueryArgs, error) {
	var a QueryArgs
	fields := []field{
		{name: "reference", kind: 's', str: &a.Reference},
		{name: "filter", kind: 's', str: &a.Filter},
		{name: "skip", kind: 'i', num: &a.Skip},
		{name: "max_bytes", kind: 'i', min: 1, num: &a.MaxBytes},
	}
	seen, err := decode(raw, hybridctx.DefaultQueryToolName, fields)
	if err == nil {
		err = required(seen, hybridctx.DefaultQueryToolName, fields, "reference", "filter")
	}
	if err != nil {
		return QueryArgs{}, err
	}
	return a, nil
}

// Encode renders a as read_artifact arguments, leaving out what is zero
// (the reference always present). ParseReadArgs(a.Encode()) == a.
func (a ReadArgs) Encode() json.RawMessage {
	b := []byte(`{"reference":`)
	b = appendString(b, a.Reference)
	for _, f := range []struct {
		name string
		v    int64
	}{{"offset", a.Offset}, {"length", a.Length}, {"start_line", a.StartLine}, {"line_count", a.LineCount}, {"max_bytes", a.MaxBytes}} {
		if f.v != 0 {
			b = append(b, `,"`+f.name+`":`...)
			b = strconv.AppendInt(b, f.v, 10)
		}
	}
	return append(b, '}')
}

func appendString(b []byte, s string) []byte {
	var q bytes.Buffer
	enc := json.NewEncoder(&q)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return append(b, bytes.TrimSuffix(q.Bytes(), []byte("\n"))...)
}

// quoteShort quotes at most 32 bytes of s.
func quoteShort(s string) string {
	if len(s) > 32 {
		s = s[:32]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		return strconv.Quote(s) + "…"
	}
	return strconv.Quote(s)
}
