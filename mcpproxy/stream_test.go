package mcpproxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/internal/boundcases"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wireconn"
)

// streamTestAbove is the streaming length in these tests (the threshold,
// testThreshold, must be at most an eighth of it).
const streamTestAbove = 8 * testThreshold

// wholeAnswer bounds result with the whole-message path on a fresh store.
func wholeAnswer(t *testing.T, result json.RawMessage) string {
	t.Helper()
	b := proxyFor(t, openStore(t, "mem://"), owner("s1"), nil).bound
	out, err := b.Wire(context.Background(), hybridctx.Call{Tool: "big", ID: "1"}, result)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// jsonQuote writes s as a JSON string: encoding/json's way (mode even), or
// escaping everything outside printable ASCII, with surrogate pairs.
func jsonQuote(s string, mode uint8) string {
	if mode%2 == 0 {
		b, _ := json.Marshal(s)
		return string(b)
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04X`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		case r < 0x20 || r > 0x7e:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FuzzStreamedResult: a result bounded as it is read gets the same answer,
// byte for byte (so the same stored bodies, which the references name by
// their digest), as the whole-message path gives: text, base64 data,
// embedded resources and structuredContent, short and long, with escapes,
// surrogate pairs (paired and not), invalid UTF-8 and \u0000, keys in
// every order, the id before or after the result.
func FuzzStreamedResult(f *testing.F) {
	for _, shape := range []uint64{0, 1, 2, 3, 4, 5, 6, 7, 0x10, 0x25, 0x3f, 0x100, 0x1ff, 0x2a5, 0x8421, 0xfedcba9876543210, 0x0123456789abcdef, 0xffffffffffffffff} {
		f.Add([]byte("line of text\t"), shape)
	}
	f.Add([]byte("\xed\xa0\xbd"), uint64(0x77))
	f.Add([]byte(""), uint64(0x5a5a5a5a))
	f.Fuzz(func(t *testing.T, seed []byte, shape uint64) {
		if len(seed) > 64 {
			return
		}
		g := &shapeGen{seed: seed, bits: shape}
		line, result := g.response()
		// Small read buffers: every line past 256 bytes is read as a long
		// one, and payloads past the window (6 × the threshold) stream.
		r := newRawRigBuf(t, "mem://", 0, 64, func(p *Proxy) { p.streamAbove = 256 })
		r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{}}}`)
		r.upRecv(t)
		r.answer(t, line)
		got, streamed := r.recv(t), r.proxy.streamed.Load()
		if len(line) > 1024 && streamed != 1 {
			t.Fatalf("a %d-byte result was not bounded as it was read", len(line))
		}
		var resp map[string]json.RawMessage
		if err := json.Unmarshal([]byte(got), &resp); err != nil || resp["result"] == nil {
			t.Fatalf("response: %.300s", got)
		}
		want := wholeAnswer(t, result)
		if string(resp["result"]) != want && strings.Contains(want, "one JSON array of") {
			// A result folded after payloads streamed into the workspace
			// folds them by reference (the manifest): every byte reads back.
			if !strings.Contains(string(resp["result"]), `a \"reference\" in a block`) {
				t.Fatalf("a streamed fold is not a manifest: %.600s", resp["result"])
			}
			bound := r.proxy.bound.Off.Policy().ResultBound()
			if err := boundcases.Check(result, resp["result"], bound, bodyReader(&r.proxy.read)); err != nil {
				t.Fatalf("streamed fold: %v", err)
			}
			return
		}
		if string(resp["result"]) != want {
			t.Fatalf("streamed answer differs:\n got %.600s\nwant %.600s", resp["result"], want)
		}
	})
}

// shapeGen draws a tools/call response from fuzzed bits.
type shapeGen struct {
	seed []byte
	bits uint64
}

// take returns the next n bits.
func (g *shapeGen) take(n uint) int {
	v := int(g.bits & (1<<n - 1))
	g.bits = g.bits>>n | g.bits<<(64-n) // rotate: never runs dry
	return v
}

// body returns a payload: long (streamed) or short.
func (g *shapeGen) body(long bool) string {
	unit := string(g.seed) + "|é😀\u0000\"\\/\n"
	if g.take(1) == 1 {
		unit += "\xff\xfe" // raw invalid UTF-8
	}
	n := 2
	if long {
		n = (6*testThreshold+64)/len(unit) + 2 // past the streaming window
	}
	return strings.Repeat(unit, n)
}

// quote writes s as a JSON string, in one of four manners: encoding/json's,
// everything outside printable ASCII escaped (surrogate pairs), or either
// with unpaired surrogate escapes and \u0000 spliced in.
func (g *shapeGen) quote(s string) string {
	mode := g.take(2)
	q := jsonQuote(s, uint8(mode))
	if mode >= 2 {
		odd := `\ud800x\udc00\u0000\ud83d\ude00\ud83d`
		q = q[:1] + odd + q[1:len(q)-1] + odd + `"`
	}
	return q
}

// object writes members in an order drawn from the bits.
func (g *shapeGen) object(members []string) string {
	for i := len(members) - 1; i > 0; i-- {
		j := g.take(2) % (i + 1)
		members[i], members[j] = members[j], members[i]
	}
	return "{" + strings.Join(members, ",") + "}"
}

// block draws one content block.
func (g *shapeGen) block() string {
	long := g.take(1) == 1
	var m []string
	if g.take(1) == 1 {
		m = append(m, `"annotations":{"audience":["user"],"priority":0.5}`)
	}
	b64 := func() string { return `"` + base64.StdEncoding.EncodeToString([]byte(g.body(long))) + `"` }
	switch g.take(3) {
	case 0, 1:
		return g.object(append(m, `"type":"text"`, `"text":`+g.quote(g.body(long))))
	case 2:
		return g.object(append(m, `"type":"image"`, `"mimeType":"image/png"`, `"data":`+b64()))
	case 3:
		return g.object(append(m, `"type":"audio"`, `"data":`+b64()))
	case 4:
		res := g.object([]string{`"uri":"file:///r.txt"`, `"mimeType":"text/plain"`, `"text":` + g.quote(g.body(long))})
		return g.object(append(m, `"type":"resource"`, `"resource":`+res))
	case 5:
		res := g.object([]string{`"uri":"file:///r.bin"`, `"blob":` + b64()})
		return g.object(append(m, `"type":"resource"`, `"resource":`+res))
	case 6:
		return `{"type":"resource_link","uri":"file:///x","name":"x"}`
	}
	return `{"type":"text","text":"small"}`
}

// structured draws structuredContent, long or short, compact or spaced.
func (g *shapeGen) structured() string {
	rows := 2
	if g.take(1) == 1 {
		rows = (6*testThreshold + 64) / 100
	}
	var b strings.Builder
	sep := []string{",", " , ", ",\r\t "}[g.take(2)%3]
	b.WriteString(`{ "rows" : [`)
	for i := range rows {
		if i > 0 {
			b.WriteString(sep)
		}
		fmt.Fprintf(&b, `{"i":%d,"s":%s,"f":-1.5e3,"e":-2E+3,"ok":true,"n":null,"a":[0,{}]}`, i, jsonQuote(string(g.seed)+"é\u0000😀", uint8(i)))
	}
	b.WriteString("]}")
	return b.String()
}

// response returns the line and its result.
func (g *shapeGen) response() (line string, result json.RawMessage) {
	var blocks []string
	for range 1 + g.take(2) {
		blocks = append(blocks, g.block())
	}
	members := []string{`"content":[` + strings.Join(blocks, ",") + `]`}
	if g.take(1) == 1 {
		members = append(members, `"structuredContent":`+g.structured())
	}
	if g.take(1) == 1 {
		members = append(members, `"isError":false`, `"_meta":{"k":"v"}`)
	}
	res := g.object(members)
	top := []string{`"jsonrpc":"2.0"`, `"id":1`, `"result":` + res}
	return g.object(top), json.RawMessage(res)
}

// TestStreamedLimitsAndDrops: a streamed response over the limit gets the
// size error, a second large response to the same id is dropped unread,
// and the session goes on.
func TestStreamedLimitsAndDrops(t *testing.T) {
	limit := 4 * wireconn.LineBuffer
	r := newRawRigWith(t, limit, func(p *Proxy) { p.streamAbove = streamTestAbove })
	big := func(id string, n int) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", n) + `"}]}}`
	}
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big"}}`)
	r.upRecv(t)
	r.answer(t, big("1", 2*limit))
	if l := r.recv(t); errCode(t, l) != -32603 || !strings.Contains(l, "size limit") || string(fields(t, l)["id"]) != "1" {
		t.Fatalf("over the limit: %s", l)
	}
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big"}}`)
	r.upRecv(t)
	r.answer(t, big("2", 3*wireconn.LineBuffer))
	r.answer(t, big("2", 3*wireconn.LineBuffer))
	if l := r.recv(t); string(fields(t, l)["id"]) != "2" || !strings.Contains(l, "artifact://") {
		t.Fatalf("streamed: %.300s", l)
	}
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	r.upRecv(t)
	r.answer(t, `{"jsonrpc":"2.0","id":3,"result":{}}`)
	if l := r.recv(t); string(fields(t, l)["id"]) != "3" {
		t.Fatalf("after: %s", l)
	}
	if n := r.proxy.streamed.Load(); n != 2 {
		t.Fatalf("streamed %d, want 2 (the over-limit one and the first answer)", n)
	}
	if n := strings.Count(r.log.String(), "message dropped"); n != 2 {
		t.Fatalf("%d drops logged, want 2:\n%s", n, r.log.String())
	}
}

// patternReader yields n bytes of a repeated ASCII pattern without holding
// them.
type patternReader struct{ n int }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.n == 0 {
		return 0, io.EOF
	}
	const pat = "line of a long streamed tool result, plain text\\n"
	k := min(len(b), p.n)
	for i := range b[:k] {
		b[i] = pat[i%len(pat)]
	}
	p.n -= k
	return k, nil
}

// TestStreamedMemoryFlat: a 64 MiB text result goes through the proxy (the
// real streaming length, a directory workspace) allocating a small fraction
// of its size: it is never held whole.
func TestStreamedMemoryFlat(t *testing.T) {
	skipUnlessLong(t)
	const size = 64 << 20
	r := newRawRigOn(t, t.TempDir(), 0, nil)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big"}}`)
	r.upRecv(t)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	line := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`),
		&patternReader{n: size}, strings.NewReader(`"}],"isError":false}}`+"\n"))
	go func() { _, _ = io.Copy(r.upOut, line) }()
	l, _ := r.fromProxy.ReadString('\n') // no deadline: slow under -race; a hang fails by the test timeout
	runtime.ReadMemStats(&after)
	if !strings.Contains(l, "artifact://sha256/") || r.proxy.streamed.Load() != 1 {
		t.Fatalf("answer: %.300s", l)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Fatalf("allocated %d MiB for a %d MiB result", alloc>>20, size>>20)
	} else {
		t.Logf("allocated %.1f MiB for a %d MiB result", float64(alloc)/(1<<20), size>>20)
	}
}

// TestSpooledIDLast: a large result whose id comes last is spooled to a
// private file (gone at once) and streamed; over the limit, the call gets
// the size error found by its trailing id.
func TestSpooledIDLast(t *testing.T) {
	dir := t.TempDir()
	limit := 6 * wireconn.LineBuffer
	r := newRawRigWith(t, limit, func(p *Proxy) { p.streamAbove, p.tempDir = streamTestAbove, dir })
	idLast := func(id string, n int) string {
		return `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"` + strings.Repeat("y", n) + `"}]},"id":` + id + `}`
	}
	r.send(t, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"big"}}`)
	r.upRecv(t)
	r.answer(t, idLast(`"a"`, 3*wireconn.LineBuffer))
	if l := r.recv(t); string(fields(t, l)["id"]) != `"a"` || !strings.Contains(l, "artifact://") {
		t.Fatalf("spooled: %.300s", l)
	}
	r.send(t, `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"big"}}`)
	r.upRecv(t)
	r.answer(t, idLast(`"b"`, 2*limit))
	if l := r.recv(t); errCode(t, l) != -32603 || !strings.Contains(l, "size limit") || string(fields(t, l)["id"]) != `"b"` {
		t.Fatalf("over the limit: %s", l)
	}
	// The second is answered by the size check, before any bounding.
	if left, _ := os.ReadDir(dir); len(left) != 0 || r.proxy.streamed.Load() != 1 {
		t.Fatalf("%d files left in the spool directory; streamed %d", len(left), r.proxy.streamed.Load())
	}
}
