package jsonstream

import "errors"

// ErrNotObject means valid JSON that is not an object.
var ErrNotObject = errors.New("jsonstream: not a JSON object")

// EachMember reads obj, a whole JSON text, in one pass of the Tokenizer:
// it checks it as json.Valid does and, for an object, calls fn with each
// member in document order, duplicates included: key is the key's JSON
// string as written (quotes and escapes kept), value the value's bytes,
// both subslices of obj. It returns ErrBadJSON when obj is not valid JSON
// (fn may have been called for members before the error) and
// ErrNotObject when it is valid JSON but not an object (fn not called).
// This is the one-pass form of json.Valid followed by a walk of the
// object's members: a line-based JSON-RPC reader parses a message with it.
func EachMember(obj []byte, fn func(key, value []byte)) error {
	var t Tokenizer
	t.Watch(StopValue|StopValueEnd|StopKey|StopKeyEnd, 1)
	started, isObj := false, false
	var key []byte
	k, v := 0, 0 // where the current key and value begin
	for i := 0; i < len(obj); {
		n, ev := t.Scan(obj[i:])
		i += n
		switch ev {
		case Bad:
			return ErrBadJSON
		case Key:
			k = i - 1
		case KeyEnd:
			key = obj[k:i]
		case Value:
			if !started {
				started, isObj = true, obj[i-1] == '{'
				break
			}
			v = i - 1
		case ValueEnd:
			if t.Level() == 1 && isObj {
				fn(key, obj[v:i])
			}
		}
	}
	switch {
	case !t.Complete():
		return ErrBadJSON
	case !isObj:
		return ErrNotObject
	}
	return nil
}
