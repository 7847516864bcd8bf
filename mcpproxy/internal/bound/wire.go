package bound

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/jsonstream"
	"github.com/hybridctx/hybridctx/mcpblock"
)

// Wire results (the proxy).

// wirePayload returns what is decided for one block on the wire, like
// typedPayload: the payload as the rule in package mcpblock names it (a
// base64 one decoded), its MIME type, the block's annotations and the key
// of the block that holds the payload ("" when the payload is the whole
// block).
func wirePayload(raw json.RawMessage) (payload any, mime string, ann *mcp.Annotations, key string) {
	var typ string
	fields, err := objectFields(raw)
	if err != nil || json.Unmarshal(fields["type"], &typ) != nil {
		return raw, mimeJSON, nil, ""
	}
	inner := map[string]map[string]json.RawMessage{"": fields}
	get := func(in, f string) (any, bool) {
		obj, ok := inner[in]
		if !ok {
			obj, _ = objectFields(fields[in]) // not an object: no members
			inner[in] = obj
		}
		var s string
		if v := obj[f]; len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil, false
		}
		return s, true
	}
	p, v, mime, ok := mcpblock.Find(typ, get)
	if !ok || (fields["annotations"] != nil && json.Unmarshal(fields["annotations"], &ann) != nil) {
		return raw, mimeJSON, nil, ""
	}
	payload = v
	if p.Base64 {
		b, err := base64.StdEncoding.DecodeString(v.(string))
		if err != nil {
			return raw, mimeJSON, nil, ""
		}
		payload = b
	}
	key = p.Field
	if p.In != "" {
		key = p.In
	}
	return payload, mime, ann, key
}

// decideWire decides one block on the wire: on its payload, unless the rest
// of the block is itself over the threshold, then on the whole block;
// force stores it whatever its size.
func (b *Bounder) decideWire(ctx context.Context, call hybridctx.Call, raw json.RawMessage, force bool) ([]mcp.Content, artifact.Ref, error) {
	payload, mime, ann, key := wirePayload(raw)
	if key != "" && int64(len(raw)) > b.threshold() && restSize(raw, key) > b.threshold() {
		payload, mime, ann = raw, mimeJSON, nil
	}
	return b.decide(ctx, call, payload, mime, ann, force)
}

// restSize is the JSON size of a block without its payload key.
func restSize(raw json.RawMessage, key string) int64 {
	fields, err := objectFields(raw)
	if err != nil {
		return int64(len(raw))
	}
	delete(fields, key)
	b, err := json.Marshal(fields)
	if err != nil {
		return int64(len(raw))
	}
	return int64(len(b))
}

// protocolKeys are the tools/call result keys the Bounder decides itself or
// must keep for the protocol; every other key (_meta, unknown ones) is
// decided together, when together they are over the threshold.
var protocolKeys = map[string]bool{"content": true, "structuredContent": true, "isError": true,
	"resultType": true, "inputRequests": true, "requestState": true}

// extras returns the JSON of a result's keys outside protocolKeys, and
// those keys.
func extras(fields map[string]json.RawMessage) (json.RawMessage, []string) {
	rest := map[string]json.RawMessage{}
	var keys []string
	for k, v := range fields {
		if !protocolKeys[k] {
			rest[k] = v
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(rest)
	if err != nil {
		return nil, nil
	}
	return b, keys
}

// boundOpaque decides a result that is not a well-formed tools/call result
// as one payload, stored whatever its size when it is over the whole-result
// bound; a stored one becomes a result holding the notice and link.
func (b *Bounder) boundOpaque(ctx context.Context, call hybridctx.Call, result json.RawMessage) (json.RawMessage, error) {
	force := int64(len(result)) > b.Off.Policy().ResultBound()
	repl, _, err := b.decide(ctx, call, result, mimeJSON, nil, force)
	if err != nil || repl == nil {
		return result, err
	}
	return json.Marshal(&mcp.CallToolResult{Content: repl})
}

func appendEncoded(out []json.RawMessage, blocks []mcp.Content) ([]json.RawMessage, error) {
	for _, c := range blocks {
		raw, err := c.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, nil
}

// objectFields is json.Unmarshal of the JSON object raw into a map of its
// members' values as written, in one pass of the tokenizer (the last of
// duplicate keys kept, a key with an escape or a non-ASCII byte decoded
// as encoding/json decodes it); an error when raw is not a JSON object.
// The values are subslices of raw.
func objectFields(raw []byte) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	err := jsonstream.EachMember(raw, func(k, v []byte) {
		key := string(k[1 : len(k)-1])
		for i := range len(key) {
			if key[i] == '\\' || key[i] >= utf8.RuneSelf {
				_ = json.Unmarshal(k, &key)
				break
			}
		}
		fields[key] = v
	})
	if err != nil {
		return nil, err
	}
	return fields, nil
}
