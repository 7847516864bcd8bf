package viewengine

import (
	"encoding/json"
	"strconv"
)

// normalizeNumbers reads a number of more than guardDigits digits in the
// documents as a float, as jq does, so that no step parses a huge integer
// (gojq would, on every arithmetic use, in quadratic time). It walks
// without recursion; its stack holds the containers still to visit.
func normalizeNumbers(docs []any) {
	stack := []any{docs}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				x[i] = normalizeNumber(e, &stack)
			}
		case map[string]any:
			for k, e := range x {
				x[k] = normalizeNumber(e, &stack)
			}
		}
	}
}

func normalizeNumber(v any, stack *[]any) any {
	switch x := v.(type) {
	case json.Number:
		if len(x) > guardDigits {
			f, _ := strconv.ParseFloat(string(x), 64)
			return f
		}
	case []any, map[string]any:
		*stack = append(*stack, v)
	}
	return v
}
