package hybridctx

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrUnserializable means a tool result could not be encoded as JSON.
var ErrUnserializable = errors.New("tool result cannot be serialized")

// serialize returns the exact bytes the model would see inline (docs/references.md): a
// string or []byte as is, json.RawMessage as is, nil as nothing, anything
// else through encoding/json. str is set instead of b for string input, so
// the hot path does not copy.
func serialize(v any) (b []byte, str string, isStr bool, err error) {
	switch x := v.(type) {
	case nil:
		return nil, "", true, nil
	case string:
		return nil, x, true, nil
	case []byte:
		return x, "", false, nil
	case json.RawMessage:
		return x, "", false, nil
	}
	b, err = json.Marshal(v)
	if err != nil {
		return nil, "", false, fmt.Errorf("%w: %T", ErrUnserializable, v)
	}
	return b, "", false, nil
}
