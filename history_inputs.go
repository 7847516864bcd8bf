package hybridctx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// Tool inputs (docs/history.md, "Tool inputs"): with HistoryPolicy.MaskInputs
// every string value of an answered call's arguments that is over the
// inline threshold is stored and replaced by its mask, the arguments still
// valid JSON of the same shape. The call message is sent as a prompt for the
// first time by the model call after its result, so masking it then
// invalidates no cached prefix.

// errNotArguments is maskStrings' answer for arguments that are not one
// JSON value: they are left as they are.
var errNotArguments = errors.New("arguments are not one JSON value")

// maskInput masks r's input: each string value (never a key) longer than
// both the tool's inline threshold and MaxMaskLen is stored as its decoded
// text and replaced by its mask. It returns the new input, the decisions
// that stored strings, and how many strings could not be stored (they stay
// as they were); on an error the input is returned as it was. Arguments
// that are not one JSON value, and strings whose
// decoding would not be exact (invalid UTF-8 or lone surrogates), are left
// alone: masking them could not read back byte-exact.
func (c *Compactor) maskInput(ctx context.Context, r HistoryResult) (string, []*OffloadResult, int, error) {
	off := c.off.forTool(r.Call.Tool)
	limit := max(off.policy.InlineThreshold, int64(MaxMaskLen))
	if int64(len(r.Input)) <= limit || !json.Valid([]byte(r.Input)) {
		return r.Input, nil, 0, nil
	}
	var ds []*OffloadResult
	failed := 0
	out, err := maskStrings(r.Input, func(s string) (string, bool, error) {
		if int64(len(s)) <= limit || strings.ContainsRune(s, utf8.RuneError) {
			return "", false, nil
		}
		d, err := c.off.maskText(ctx, r.Call, s)
		if err != nil {
			return "", false, err
		}
		if oc := d.Outcome(); oc != Offloaded && oc != ExistingReference {
			failed++
			return "", false, nil
		}
		ds = append(ds, d)
		return d.Notice, true, nil
	})
	switch {
	case errors.Is(err, errNotArguments):
		return r.Input, nil, 0, nil
	case err != nil:
		return r.Input, nil, failed, err
	}
	return out, ds, failed, nil
}

// maskStrings returns input with each string value (not key) that f
// replaces spliced in as a JSON string; every other byte stays as it was,
// so arguments with nothing replaced come back identical.
func maskStrings(input string, f func(string) (string, bool, error)) (string, error) {
	dec := json.NewDecoder(strings.NewReader(input))
	dec.UseNumber()
	type frame struct{ object, wantKey bool }
	var stack []frame
	var b strings.Builder
	copied := 0 // input bytes already in b
	values := 0 // top-level values
	for {
		prev := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", errNotArguments
		}
		top := len(stack) - 1
		isKey := top >= 0 && stack[top].object && stack[top].wantKey
		if top >= 0 && stack[top].object {
			stack[top].wantKey = !isKey
		}
		if top < 0 {
			values++
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, frame{object: t == '{', wantKey: t == '{'})
			default:
				stack = stack[:top]
				if n := len(stack) - 1; n >= 0 && stack[n].object {
					stack[n].wantKey = true
				}
			}
		case string:
			if isKey {
				continue
			}
			repl, ok, err := f(t)
			if err != nil {
				return "", err
			}
			if !ok {
				continue
			}
			end := int(dec.InputOffset())
			start := int(prev) + strings.IndexByte(input[prev:end], '"')
			b.WriteString(input[copied:start])
			var q bytes.Buffer
			enc := json.NewEncoder(&q)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(repl); err != nil {
				return "", err
			}
			b.Write(bytes.TrimSuffix(q.Bytes(), []byte("\n")))
			copied = end
		}
	}
	if values != 1 || len(stack) != 0 {
		return "", errNotArguments
	}
	if copied == 0 {
		return input, nil
	}
	b.WriteString(input[copied:])
	return b.String(), nil
}
