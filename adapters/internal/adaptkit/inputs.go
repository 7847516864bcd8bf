package adaptkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// Tool inputs held as Go values (Anthropic's tool_use input, Genkit's tool
// request input are of type any): the compactor masks JSON text, so the
// value goes to it encoded and comes back decoded into its own type.

// errInputType is fromInputJSON's answer for masked arguments that do not
// decode back into the value's type and encode to the same JSON.
var errInputType = errors.New("hybridctx adapter: masked arguments do not fit the input's type")

// inputJSON encodes a call's input: a json.RawMessage as it is (it is the
// JSON the library sends), anything else as encoding/json encodes it, with
// no HTML escaping (the text is only read back by fromInputJSON).
func inputJSON(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// fromInputJSON returns masked, the JSON inputJSON(orig) became, as a value
// of orig's type: a json.RawMessage as the text itself; anything else
// decoded into a new value of that type, accepted only when it encodes back
// to exactly masked. Numbers in an any decode as float64, as the libraries'
// own decoders give them (a json.Number would reach the model as a string
// through an SDK encoder that does not know it), so arguments holding a
// number a float64 cannot carry exactly do not fit. Otherwise the error
// wraps errInputType and orig stays.
func fromInputJSON(orig any, masked []byte) (any, error) {
	if _, ok := orig.(json.RawMessage); ok {
		return json.RawMessage(masked), nil
	}
	t := reflect.TypeOf(orig)
	if t == nil {
		return nil, fmt.Errorf("%w: no value", errInputType)
	}
	p := reflect.New(t)
	if err := json.Unmarshal(masked, p.Interface()); err != nil {
		return nil, fmt.Errorf("%w: %v", errInputType, err)
	}
	v := p.Elem().Interface()
	back, err := inputJSON(v)
	if err != nil || !bytes.Equal(back, masked) {
		return nil, fmt.Errorf("%w: %T does not encode back to the masked arguments", errInputType, orig)
	}
	return v, nil
}
