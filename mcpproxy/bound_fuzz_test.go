package mcpproxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/boundcases"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
)

// fuzzResult draws a tools/call result from fuzzed bytes: up to 63 blocks
// of every kind (text with escapes and invalid UTF-8, base64 media,
// embedded resources, links, unknown types), sizes up to 7 KB, and
// optional structuredContent and _meta.
func fuzzResult(seed []byte, shape uint64) string {
	next := func(n uint) int {
		v := int(shape & (1<<n - 1))
		shape = shape>>n | shape<<(64-n)
		return v
	}
	body := func(n int) string {
		if len(seed) == 0 {
			return strings.Repeat("x", n)
		}
		var b strings.Builder
		for b.Len() < n {
			b.Write(seed)
		}
		return b.String()[:n]
	}
	size := func() int { return []int{10, 90, 300, 900, 2000, 7000, 3000, 40}[next(3)] }
	var blocks []string
	for range next(6) {
		s := body(size())
		switch next(3) {
		case 0, 1, 2:
			blocks = append(blocks, `{"type":"text","text":`+jsonQuote(s, uint8(next(1)))+`}`)
		case 3:
			blocks = append(blocks, `{"type":"image","data":"`+base64.StdEncoding.EncodeToString([]byte(s))+`","mimeType":"image/png"}`)
		case 4:
			blocks = append(blocks, `{"type":"resource","resource":{"uri":"file:///r","text":`+jsonQuote(s, 0)+`}}`)
		case 5:
			blocks = append(blocks, `{"type":"resource","resource":{"uri":"file:///r","blob":"`+base64.StdEncoding.EncodeToString([]byte(s))+`"}}`)
		case 6:
			blocks = append(blocks, `{"type":"resource_link","uri":"file:///l","name":`+jsonQuote(s[:min(len(s), 40)], 0)+`}`)
		default:
			blocks = append(blocks, `{"type":"x-`+string(rune('a'+next(4)))+`","v":`+jsonQuote(s, 1)+`}`)
		}
	}
	members := []string{`"content":[` + strings.Join(blocks, ",") + `]`}
	if next(1) == 1 {
		members = append(members, `"structuredContent":{"s":`+jsonQuote(body(size()), 0)+`}`)
	}
	if next(1) == 1 {
		members = append(members, `"_meta":{"m":`+jsonQuote(body(size()), 1)+`}`)
	}
	if next(1) == 1 {
		members = append(members, `"isError":true`)
	}
	return "{" + strings.Join(members, ",") + "}"
}

// FuzzResultBound: whatever a result holds, on the wire, typed and
// streamed paths, at most the whole-result bound + 1 KiB reaches the
// client, as encoded, and every original byte reads back through the read
// tools.
func FuzzResultBound(f *testing.F) {
	for _, shape := range []uint64{0, 0x3f, 0x1234567890abcdef, 0xffffffffffffffff, 0x8000000000000fff, 0x5555555555555555} {
		f.Add([]byte("line of text\t"), shape, uint16(1000))
		f.Add([]byte("\x01\"\\\xe2\x80\xa8"), shape, uint16(100))
	}
	f.Fuzz(func(t *testing.T, seed []byte, shape uint64, threshold uint16) {
		if len(seed) > 64 {
			return
		}
		pol := hybridctx.Policy{InlineThreshold: int64(threshold%4000) + 1}
		result := fuzzResult(seed, shape)
		call := hybridctx.Call{Tool: "t", ID: "1"}
		off, rd := casePair(t, pol)
		b := &bound.Bounder{Off: off}
		out, err := b.Wire(context.Background(), call, json.RawMessage(result))
		if err != nil {
			t.Fatal(err)
		}
		if err := boundcases.Check(json.RawMessage(result), out, pol.ResultBound(), bodyReader(rd)); err != nil {
			t.Fatalf("wire: %v\n%.400s", err, out)
		}
		r := newRawRigOn(t, "mem://", 0, func(p *Proxy) {
			off, rd := casePair(t, pol)
			p.streamAbove = 256
			p.bound.Off, p.read = off, *rd
			p.read.mimeOf = p.mimes.get
		})
		r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}`)
		r.upRecv(t)
		r.answer(t, `{"jsonrpc":"2.0","id":1,"result":`+result+`}`)
		got := fields(t, r.recv(t))
		if got["error"] != nil {
			return // a streamed result the whole message would read otherwise (stream.go)
		}
		if err := boundcases.Check(json.RawMessage(result), got["result"], pol.ResultBound(), bodyReader(&r.proxy.read)); err != nil {
			t.Fatalf("streamed: %v\n%.400s", err, got["result"])
		}
	})
}
