// Package boundcases holds the table of tools/call results that every path
// bounding MCP results is tested with (the proxy's wire, typed and
// streamed results, mcpproxy.Middleware, adapters/mcpgo), and the check
// each path's answer must pass: at most the whole-result bound plus
// hybridctx.ResultSlack bytes as encoded, and every original byte readable
// back through the references it holds (docs/mcp-proxy.md, "The
// whole-result bound"). It is test support: no production code imports it.
package boundcases

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/mcpblock"
)

// Case is one result and the policy it is bounded under.
type Case struct {
	Name string
	// Policy is the offloader's policy (Tokenizer set when
	// ResultThresholdTokens is).
	Policy hybridctx.Policy
	// Result is the tools/call result as the upstream sends it.
	Result json.RawMessage
	// Streams reports whether some payload is long enough to be streamed
	// into the workspace by the proxy (over six times the threshold).
	Streams bool
}

// Bound returns the case's whole-result bound in bytes.
func (c Case) Bound() int64 { return c.Policy.ResultBound() }

func textBlock(s string) string {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
	return string(b)
}

func filler(i, n int, pad string) string {
	p := fmt.Sprintf("block %04d ", i)
	return p + strings.Repeat(pad, (n-len(p))/len(pad))
}

func result(blocks []string, rest ...string) json.RawMessage {
	m := append([]string{`"content":[` + strings.Join(blocks, ",") + `]`}, rest...)
	return json.RawMessage("{" + strings.Join(m, ",") + "}")
}

func texts(n, size int, pad string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = textBlock(filler(i, size, pad))
	}
	return out
}

// Cases returns the table.
func Cases() []Case {
	esc := strings.Repeat("\x01", 1000)
	quotes := strings.Repeat("\"\x01\\é", 225)
	b64 := func(n int, seed byte) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7) ^ seed
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	rows := make([]string, 400)
	for i := range rows {
		rows[i] = fmt.Sprintf(`{"row":%d,"name":"name %04d","tags":["a","b"]}`, i, i)
	}
	structured := "[" + strings.Join(rows, ",") + "]"
	meta := `{"pad":"` + strings.Repeat("m", 200_000) + `"}`
	mixed := []string{
		textBlock("short text"),
		`{"type":"image","data":"` + b64(700, 1) + `","mimeType":"image/png"}`,
		`{"type":"audio","data":"` + b64(5000, 2) + `","mimeType":"audio/wav","annotations":{"audience":["user"]}}`,
		`{"type":"resource","resource":{"uri":"file:///a.csv","mimeType":"text/csv","text":"` + strings.Repeat("a,b\\n", 180) + `"}}`,
		`{"type":"resource","resource":{"uri":"file:///b.bin","blob":"` + b64(900, 3) + `"}}`,
		`{"type":"resource_link","uri":"file:///c","name":"c"}`,
		`{"type":"hologram","x":"` + strings.Repeat("h", 900) + `"}`,
		`{"type":"structuredContent","x":"a block, not the member"}`,
		textBlock(quotes),
	}
	var mixedMany []string
	for range 12 {
		mixedMany = append(mixedMany, mixed...)
	}
	t1000 := hybridctx.Policy{InlineThreshold: 1000}
	return []Case{
		{Name: "many small blocks", Policy: hybridctx.Policy{InlineThreshold: 16384}, Result: result(texts(2000, 400, "x"))},
		{Name: "blocks of 40 bytes", Policy: hybridctx.Policy{InlineThreshold: 1000}, Result: result(texts(3000, 40, "x"))},
		{Name: "many streamed large blocks", Policy: hybridctx.Policy{InlineThreshold: 1000, ResultThreshold: 4000},
			Result: result(texts(200, 7000, "y")), Streams: true},
		{Name: "one escape-heavy block", Policy: t1000, Result: result([]string{textBlock(esc)})},
		{Name: "escape-heavy blocks", Policy: t1000, Result: result(texts(40, 900, "\x01\"\\"))},
		{Name: "big structuredContent", Policy: t1000, Result: result(texts(3, 500, "s"), `"structuredContent":`+structured)},
		{Name: "structuredContent under the threshold, over the bound", Policy: hybridctx.Policy{InlineThreshold: 30000, ResultThreshold: 2000},
			Result: result([]string{textBlock("hi")}, `"structuredContent":`+structured)},
		{Name: "big _meta", Policy: hybridctx.Policy{InlineThreshold: 1024}, Result: result([]string{textBlock("ok")}, `"_meta":`+meta, `"isError":false`)},
		{Name: "everything over a small bound", Policy: hybridctx.Policy{InlineThreshold: 100},
			Result: result(texts(30, 90, "z"), `"structuredContent":{"k":"`+strings.Repeat("v", 90)+`"}`, `"_meta":{"p":"`+strings.Repeat("q", 90)+`"}`)},
		{Name: "mixed media", Policy: t1000, Result: result(mixed)},
		{Name: "mixed media, many", Policy: t1000, Result: result(mixedMany, `"isError":true`)},
		{Name: "mixed media, streamed", Policy: hybridctx.Policy{InlineThreshold: 200},
			Result: result(append(mixed, textBlock(strings.Repeat("long ", 400))), `"structuredContent":`+structured), Streams: true},
	}
}

// Sent returns the size of a result as the client receives it, encoded.
func Sent(bounded json.RawMessage) int64 { return int64(len(bounded)) }

// ErrLost means an original byte is not recoverable from a bounded result.
var ErrLost = errors.New("boundcases: content lost")

// Check checks a bounded result against its original: at most bound +
// hybridctx.ResultSlack bytes, and every content block, structuredContent
// and other member recoverable, inline or through the references it holds
// (body returns a reference's body, read through the read tools).
func Check(orig, bounded json.RawMessage, bound int64, body func(ref string) ([]byte, error)) error {
	if n := Sent(bounded); n > bound+hybridctx.ResultSlack {
		return fmt.Errorf("%d bytes reach the client, bound %d + %d", n, bound, hybridctx.ResultSlack)
	}
	var o, g map[string]json.RawMessage
	if err := json.Unmarshal(orig, &o); err != nil {
		return err
	}
	if err := json.Unmarshal(bounded, &g); err != nil {
		return fmt.Errorf("bounded result: %w", err)
	}
	var ob, gb []json.RawMessage
	_ = json.Unmarshal(o["content"], &ob)
	if err := json.Unmarshal(g["content"], &gb); err != nil && g["content"] != nil {
		return err
	}
	r := &recovery{body: body, inline: map[string]bool{}, bodies: map[string]bool{}}
	for j, blk := range gb {
		r.inline[compact(blk)] = true
		var l struct{ Type, URI string }
		_ = json.Unmarshal(blk, &l)
		if l.Type != "resource_link" || !strings.HasPrefix(l.URI, "artifact://") {
			continue
		}
		b, err := body(l.URI)
		if err != nil {
			return fmt.Errorf("reading %s: %w", l.URI, err)
		}
		r.bodies[string(b)] = true
		var notice struct{ Text string }
		if j > 0 && json.Unmarshal(gb[j-1], &notice) == nil && strings.Contains(notice.Text, "one JSON array of") {
			if r.fold != nil {
				return errors.New("two folds in one result")
			}
			if err := json.Unmarshal(b, &r.fold); err != nil {
				return fmt.Errorf("fold body: %w", err)
			}
		}
	}
	if r.fold != nil && len(r.fold) < len(ob) {
		return fmt.Errorf("fold of %d entries for %d blocks", len(r.fold), len(ob))
	}
	for i, blk := range ob {
		if err := r.block(i, blk); err != nil {
			return fmt.Errorf("block %d: %w", i, err)
		}
	}
	rest := r.fold
	if len(rest) >= len(ob) {
		rest = rest[len(ob):]
	}
	if sc, ok := o["structuredContent"]; ok && string(sc) != "null" {
		if err := r.member(sc, g["structuredContent"], hybridctx.PartStructured, rest); err != nil {
			return fmt.Errorf("structuredContent: %w", err)
		}
	}
	others, kept := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for k, v := range o {
		if !protocol[k] {
			others[k] = v
			if gv, ok := g[k]; ok {
				kept[k] = gv
			}
		}
	}
	if len(others) > 0 {
		want, _ := json.Marshal(others)
		got, _ := json.Marshal(kept)
		if err := r.member(want, got, hybridctx.PartMembers, rest); err != nil {
			return fmt.Errorf("members: %w", err)
		}
	}
	return nil
}

var protocol = map[string]bool{"content": true, "structuredContent": true, "isError": true,
	"resultType": true, "inputRequests": true, "requestState": true}

type recovery struct {
	body   func(string) ([]byte, error)
	inline map[string]bool
	bodies map[string]bool
	fold   []json.RawMessage
}

// block finds original block i: inline, its payload (or whole JSON) as a
// stored body, or the fold's entry i, whole or with its payload's
// reference.
func (r *recovery) block(i int, blk json.RawMessage) error {
	if r.inline[compact(blk)] {
		return nil
	}
	payload := Payload(blk)
	if r.bodies[string(payload)] || r.bodies[string(blk)] {
		return nil
	}
	if i >= len(r.fold) {
		return ErrLost
	}
	e := r.fold[i]
	if compact(e) == compact(blk) {
		return nil
	}
	ref, ok := findRef(e)
	if !ok || blockType(e) != blockType(blk) {
		return fmt.Errorf("%w: fold entry %.120s", ErrLost, e)
	}
	b, err := r.body(ref)
	if err != nil {
		return err
	}
	if !bytes.Equal(b, payload) {
		return fmt.Errorf("%w: %s holds %d bytes, not the payload's %d", ErrLost, ref, len(b), len(payload))
	}
	return nil
}

// member finds structuredContent or the other members: kept inline (got),
// stored as a body, or in a fold entry of typ, whole or by reference.
func (r *recovery) member(want, got json.RawMessage, typ string, entries []json.RawMessage) error {
	if compact(want) == compact(got) || r.bodies[string(want)] || r.bodies[compact(want)] {
		return nil
	}
	for _, e := range entries {
		var m map[string]json.RawMessage
		if json.Unmarshal(e, &m) != nil || blockType(e) != typ {
			continue
		}
		v := m[typ]
		if compact(v) == compact(want) {
			return nil
		}
		if ref, ok := findRef(v); ok {
			b, err := r.body(ref)
			if err != nil {
				return err
			}
			if bytes.Equal(b, want) {
				return nil
			}
		}
	}
	return ErrLost
}

// Payload returns what the rule in package mcpblock stores of a block: its
// payload (base64 decoded), or its whole JSON.
func Payload(blk json.RawMessage) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(blk, &fields) != nil {
		return blk
	}
	get := func(in, f string) (any, bool) {
		obj := fields
		if in != "" {
			obj = nil
			if json.Unmarshal(fields[in], &obj) != nil {
				return nil, false
			}
		}
		var s string
		if v := obj[f]; len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil, false
		}
		return s, true
	}
	p, v, _, ok := mcpblock.Find(blockType(blk), get)
	if !ok {
		return blk
	}
	if p.Base64 {
		b, err := base64.StdEncoding.DecodeString(v.(string))
		if err != nil {
			return blk
		}
		return b
	}
	return []byte(v.(string))
}

func blockType(raw json.RawMessage) string {
	var w struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &w)
	return w.Type
}

// findRef returns the reference of the first {"reference": …} object in v.
func findRef(v json.RawMessage) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return "", false
	}
	var ref string
	if json.Unmarshal(m["reference"], &ref) == nil && strings.HasPrefix(ref, "artifact://") {
		return ref, true
	}
	for _, x := range m {
		if ref, ok := findRef(x); ok {
			return ref, true
		}
	}
	return "", false
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}
