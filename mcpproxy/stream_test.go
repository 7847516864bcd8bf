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
)

// streamTestAbove is the streaming length in these tests (the threshold,
// testThreshold, must be at most an eighth of it).
const streamTestAbove = 8 * testThreshold

// streamedAnswer sends one tools/call through a proxy that streams lines
// past streamTestAbove, answers it with the upstream line, and returns the
// response the client gets and how many payloads were streamed.
func streamedAnswer(t *testing.T, line string) (string, int64) {
	t.Helper()
	r := newRawRigWith(t, 0, func(p *Proxy) { p.streamAbove = streamTestAbove })
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{}}}`)
	r.upRecv(t)
	r.answer(t, line)
	return r.recv(t), r.proxy.streamed.Load()
}

// wholeAnswer bounds result with the whole-message path on a fresh store.
func wholeAnswer(t *testing.T, result json.RawMessage) string {
	t.Helper()
	b := proxyFor(t, openStore(t, "mem://"), owner("s1"), nil).bound
	out, err := b.boundWire(context.Background(), hybridctx.Call{Tool: "big", ID: "1"}, result)
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

// streamShape builds a tools/call response from seed bytes and shape bits,
// and reports whether the proxy can stream it.
func streamShape(seed []byte, shape uint8) (line string, result json.RawMessage, streamable bool) {
	unit := string(seed) + "|é😀\u0000\"\\/\n"
	if shape&0x80 != 0 {
		unit += "\xff\xfe" // raw invalid UTF-8
	}
	body := strings.Repeat(unit, (2*lineBuffer+streamTestAbove)/len(unit)+2)
	var payloadBlock string
	typeLast := len(seed)%3 == 2 // the type after the payload, as a sorted-key encoder writes it
	switch {
	case shape&2 == 0 && typeLast:
		payloadBlock = `{"text":` + jsonQuote(body, shape) + `,"type":"text"`
	case shape&2 == 0:
		payloadBlock = `{"type":"text","text":` + jsonQuote(body, shape)
	case typeLast:
		payloadBlock = `{"data":"` + base64.StdEncoding.EncodeToString([]byte(body)) + `","mimeType":"image/png","type":"image"`
	default:
		payloadBlock = `{"type":"image","mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString([]byte(body)) + `"`
	}
	if shape&16 != 0 {
		payloadBlock += `,"annotations":{"audience":["user"],"priority":0.5}`
	}
	blocks := payloadBlock + "}"
	if len(seed)%2 == 1 { // small blocks before the streamed one
		blocks = `{"type":"text","text":"lead"},{"type":"resource_link","uri":"file:///x","name":"x"},` + blocks
	}
	if shape&4 != 0 {
		blocks += `,{"type":"text","text":"small"},{"type":"text","text":` + jsonQuote(strings.Repeat("second ", 400), 0) + `}`
	}
	res := `{"content":[` + blocks + `]`
	if shape&8 != 0 {
		sc, _ := json.Marshal(map[string]string{"v": body[:3*testThreshold]})
		res += `,"structuredContent":` + string(sc) + `,"isError":false`
	}
	res += `}`
	switch {
	case shape&64 != 0: // the id after the result: read whole
		line = `{"jsonrpc":"2.0","result":` + res + `,"id":1}`
	case shape&32 != 0:
		line = `{"id":1,"result":` + res + `,"jsonrpc":"2.0"}`
	default:
		line = `{"jsonrpc":"2.0","id":1,"result":` + res + `}`
	}
	return line, json.RawMessage(res), true
}

// FuzzStreamedResult: a result streamed into the offloader gets the same
// bounded answer, byte for byte (so the same stored bodies, which the
// references name), as the whole-message path gives.
func FuzzStreamedResult(f *testing.F) {
	for _, shape := range []uint8{0, 1, 2, 3, 4, 8, 16, 32, 64, 0x80, 0x81, 0x1f, 0x3d} {
		f.Add([]byte("line of text\t"), shape)
		f.Add([]byte("type last!!"), shape) // len%3 == 2: the type last
	}
	f.Add([]byte("\xed\xa0\xbd"), uint8(1))
	f.Fuzz(func(t *testing.T, seed []byte, shape uint8) {
		if len(seed) > 256 {
			return
		}
		line, result, streamable := streamShape(seed, shape)
		got, streamed := streamedAnswer(t, line)
		if want := int64(0); streamable {
			want = 1
			if streamed != want {
				t.Fatalf("streamed %d payloads, want %d", streamed, want)
			}
		} else if streamed != 0 {
			t.Fatalf("streamed a result whose id comes last")
		}
		var resp map[string]json.RawMessage
		if err := json.Unmarshal([]byte(got), &resp); err != nil || resp["result"] == nil {
			t.Fatalf("response: %.300s", got)
		}
		if want := wholeAnswer(t, result); string(resp["result"]) != want {
			t.Fatalf("streamed answer differs:\n got %.600s\nwant %.600s", resp["result"], want)
		}
	})
}

// TestStreamedLimitsAndDrops: a streamed response over the limit gets the
// size error, a second large response to the same id is dropped unread,
// and the session goes on.
func TestStreamedLimitsAndDrops(t *testing.T) {
	limit := 4 * lineBuffer
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
	r.answer(t, big("2", 3*lineBuffer))
	r.answer(t, big("2", 3*lineBuffer))
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
	limit := 6 * lineBuffer
	r := newRawRigWith(t, limit, func(p *Proxy) { p.streamAbove, p.tempDir = streamTestAbove, dir })
	idLast := func(id string, n int) string {
		return `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"` + strings.Repeat("y", n) + `"}]},"id":` + id + `}`
	}
	r.send(t, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"big"}}`)
	r.upRecv(t)
	r.answer(t, idLast(`"a"`, 3*lineBuffer))
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
