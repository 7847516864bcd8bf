package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ErrInvalidArguments wraps every complaint about a read tool call's
// arguments. Its text is meant for the model: it says what was wrong and
// what is expected, and never repeats the arguments.
var ErrInvalidArguments = errors.New("read_artifact: invalid arguments")

// MaxReadArgsBytes bounds the JSON arguments of one read tool call.
const MaxReadArgsBytes = 4096

// argsHint ends every argument error, so the model can correct its call.
const argsHint = `; expected {"reference": "artifact://sha256/<64 hex>", "offset": integer >= 0, "length": integer >= 0, "max_bytes": integer >= 1}, only reference required`

// ReadArgs are the decoded arguments of read_artifact.
type ReadArgs struct {
	// Reference is the reference text, as the model gave it.
	Reference string
	// Offset and Length select a byte range; Length 0 means to the end.
	Offset, Length int64
	// MaxBytes is the model's own budget; 0 means it gave none.
	MaxBytes int64
}

func argsError(format string, a ...any) error {
	return fmt.Errorf("%w: "+format+argsHint, append([]any{ErrInvalidArguments}, a...)...)
}

// ParseReadArgs decodes read_artifact arguments: one JSON object with a
// string "reference" and optional integers "offset" (>= 0), "length"
// (>= 0) and "max_bytes" (>= 1); null counts as absent. Unknown fields,
// trailing data, fractions and out-of-range numbers are rejected. The error
// wraps ErrInvalidArguments.
func ParseReadArgs(raw json.RawMessage) (ReadArgs, error) {
	var a ReadArgs
	if len(raw) > MaxReadArgsBytes {
		return a, argsError("the arguments are %d bytes, more than %d", len(raw), MaxReadArgsBytes)
	}
	if !utf8.Valid(raw) {
		return a, argsError("the arguments are not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return a, argsError("the arguments must be a JSON object")
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&fields); err != nil {
		return a, argsError("the arguments are not valid JSON")
	}
	if dec.More() || dec.InputOffset() != int64(len(trimmed)) {
		return a, argsError("unexpected data after the arguments object")
	}
	var seenRef bool
	for k, v := range fields {
		isNull := string(v) == "null"
		switch k {
		case "reference":
			if isNull {
				continue
			}
			if err := json.Unmarshal(v, &a.Reference); err != nil {
				return a, argsError("reference must be a string")
			}
			seenRef = true
		case "offset":
			if err := intField(v, isNull, "offset", 0, &a.Offset); err != nil {
				return a, err
			}
		case "length":
			if err := intField(v, isNull, "length", 0, &a.Length); err != nil {
				return a, err
			}
		case "max_bytes":
			if err := intField(v, isNull, "max_bytes", 1, &a.MaxBytes); err != nil {
				return a, err
			}
		default:
			return a, argsError("unknown field %s", quoteShort(k))
		}
	}
	if !seenRef || a.Reference == "" {
		return a, argsError("reference is required")
	}
	return a, nil
}

// intField decodes one optional integer field that must be >= min.
func intField(v json.RawMessage, isNull bool, name string, min int64, dst *int64) error {
	if isNull {
		return nil
	}
	var n json.Number
	if len(v) == 0 || v[0] == '"' || json.Unmarshal(v, &n) != nil {
		return argsError("%s must be an integer", name)
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return argsError("%s must be an integer between %d and %d", name, min, int64(1<<63-1))
	}
	if i < min {
		return argsError("%s must be >= %d", name, min)
	}
	*dst = i
	return nil
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
