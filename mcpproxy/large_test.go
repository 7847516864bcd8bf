package mcpproxy

import (
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/wireconn"
)

// longString is a JSON string of about n bytes with escapes and non-ASCII.
func longString(n int) string {
	unit := `line \"q\" \\ é 😀 \u0000 \ud83d\ude00 \ud800 tab\t` + "\xff"
	return `"` + strings.Repeat(unit, n/len(unit)+1) + `"`
}

// TestLongMessagesPassInPieces: long messages the proxy does not bound go
// through spooled, byte for byte, both ways; the routing fields of a long
// client request are found wherever they are; nothing is left in the spool
// directory.
func TestLongMessagesPassInPieces(t *testing.T) {
	dir := t.TempDir()
	r := newRawRigWith(t, 0, func(p *Proxy) { p.streamAbove, p.tempDir = streamTestAbove, dir })
	arg := longString(3 * wireconn.LineBuffer)

	// A tools/call whose name comes after its long arguments.
	params := `{"arguments":{"x":` + arg + `}, "name" : "echo"}`
	r.send(t, `{"id":7,"params":`+params+`,"method":"tools/call","jsonrpc":"2.0"}`)
	if got, want := r.upRecv(t), `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":`+params+`}`; got != want {
		t.Fatalf("forwarded %d bytes, want %d", len(got), len(want))
	}
	// Its answer (short), then a long resources/read result.
	r.answer(t, `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
	r.recv(t)
	r.send(t, `{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///big"}}`)
	r.upRecv(t)
	result := `{"contents":[{"uri":"file:///big","text":` + arg + `}]}`
	r.answer(t, `{"result":`+result+`,"id":8,"jsonrpc":"2.0"}`)
	if got, want := r.recv(t), `{"jsonrpc":"2.0","id":8,"result":`+result+`}`; got != want {
		t.Fatalf("passed %d bytes, want %d", len(got), len(want))
	}
	// A long notification from the upstream.
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + arg + `}}`
	r.answer(t, note)
	if got := r.recv(t); got != note {
		t.Fatalf("notification: %d bytes, want %d", len(got), len(note))
	}
	// Long requests the proxy serves itself: never forwarded.
	r.send(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{"ref":"artifact://sha256/`+strings.Repeat("0", 64)+`","pad":`+arg+`},"NAME":"read_artifact"}}`)
	if l := r.recv(t); string(fields(t, l)["id"]) != "9" || !strings.Contains(l, "result") {
		t.Fatalf("long read_artifact call: %.300s", l)
	}
	r.send(t, `{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"pad":`+arg+`,"uri":"artifact://sha256/`+strings.Repeat("0", 64)+`"}}`)
	if l := r.recv(t); string(fields(t, l)["id"]) != "10" || errCode(t, l) == 0 {
		t.Fatalf("long artifact read: %.300s", l)
	}
	// A long resources/read whose uri is not a string goes upstream.
	r.send(t, `{"jsonrpc":"2.0","id":11,"method":"resources/read","params":{"pad":`+arg+`,"uri":7}}`)
	if l := r.upRecv(t); string(fields(t, l)["id"]) != "11" {
		t.Fatalf("not forwarded: %.300s", l)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d files left in the spool directory", len(left))
	}
}

// TestLongClientLinesRefused: a long client line that is not valid JSON,
// or over the limit, gets the error the short one gets, under its id found
// wherever it is; the session goes on.
func TestLongClientLinesRefused(t *testing.T) {
	limit := 8 * wireconn.LineBuffer
	r := newRawRigWith(t, limit, func(p *Proxy) { p.streamAbove = streamTestAbove })
	arg := longString(2 * wireconn.LineBuffer)
	for _, c := range []struct {
		line string
		code int64
	}{
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"x":` + arg + `,}},"id":"bad"}`, -32700},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"x":` + longString(2*limit) + `}},"id":"big"}`, -32600},
		{`{"jsonrpc":"1.0","id":"v","method":"x","params":` + arg + `}`, -32600},
	} {
		r.send(t, c.line)
		l := r.recv(t)
		if errCode(t, l) != c.code || !strings.Contains(c.line, `"id":`+string(fields(t, l)["id"])) {
			t.Fatalf("answer: %s", l)
		}
	}
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if l := r.upRecv(t); string(fields(t, l)["id"]) != "3" {
		t.Fatalf("after: %s", l)
	}
}

// TestStreamedUnusualResults: the results a streamed read cannot bound as
// the whole message would be (stream.go lists them) get a JSON-RPC error
// under their id, and the session goes on.
func TestStreamedUnusualResults(t *testing.T) {
	r := newRawRigBuf(t, "mem://", 0, 64, func(p *Proxy) { p.streamAbove = 256 })
	long := strings.Repeat("x", 8*testThreshold)
	for i, res := range []string{
		// base64 that is mostly escaped line breaks: it decodes to little.
		`{"content":[{"type":"image","mimeType":"image/png","data":"QUFB` + strings.Repeat(`\n`, 4*testThreshold) + `"}]}`,
		// the type, once known, reads another key.
		`{"content":[{"text":"` + long + `","type":"image","data":"QUFB"}]}`,
		// the payload key repeated: the last one counts.
		`{"content":[{"type":"text","text":"` + long + `","text":"short"}]}`,
		// the other fields over the threshold.
		`{"content":[{"type":"text","text":"` + long + `","_meta":{"m":"` + long + `"}}]}`,
	} {
		id := strconv.Itoa(i + 1)
		r.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"t"}}`)
		r.upRecv(t)
		r.answer(t, `{"jsonrpc":"2.0","id":`+id+`,"result":`+res+`}`)
		if l := r.recv(t); errCode(t, l) != -32603 || !strings.Contains(l, "could not be bounded") || string(fields(t, l)["id"]) != id {
			t.Fatalf("result %d: %.300s", i, l)
		}
	}
	r.send(t, `{"jsonrpc":"2.0","id":99,"method":"ping"}`)
	r.upRecv(t)
	r.answer(t, `{"jsonrpc":"2.0","id":99,"result":{}}`)
	if l := r.recv(t); string(fields(t, l)["id"]) != "99" {
		t.Fatalf("after: %s", l)
	}
}

// TestStreamedBadPayloadStoresNothing: a long payload that turns out
// malformed part-way (an invalid escape in a text block, structuredContent
// that is not JSON) gets a JSON-RPC error under its id, and no body, whole
// or partial, is left in the workspace (docs/offload.md: nothing is written from a
// failed stream).
func TestStreamedBadPayloadStoresNothing(t *testing.T) {
	dir := t.TempDir()
	r := newRawRigBuf(t, dir, 0, 64, func(p *Proxy) { p.streamAbove = 256 })
	long := strings.Repeat("x", 8*testThreshold)
	for i, res := range []string{
		`{"content":[{"type":"text","text":"` + long + `\q` + long + `"}]}`,
		`{"content":[],"structuredContent":{"a":"` + long + `","b":}}`,
		`{"content":[{"type":"image","mimeType":"image/png","data":"` + strings.Repeat("QUFB", 2*testThreshold) + `!!!!"}]}`,
	} {
		id := strconv.Itoa(i + 1)
		r.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"t"}}`)
		r.upRecv(t)
		r.answer(t, `{"jsonrpc":"2.0","id":`+id+`,"result":`+res+`}`)
		if l := r.recv(t); errCode(t, l) >= 0 || string(fields(t, l)["id"]) != id {
			t.Fatalf("result %d: %.300s", i, l)
		}
	}
	if n := r.proxy.streamed.Load(); n != 3 {
		t.Fatalf("%d of 3 results were streamed: the test does not test streaming", n)
	}
	bodies := func() int { return storedBodies(t, dir) }
	if n := bodies(); n != 0 {
		t.Fatalf("%d bodies stored from malformed streams", n)
	}
	// The same count sees a body that a good stream stores.
	r.send(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"t"}}`)
	r.upRecv(t)
	r.answer(t, `{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"`+long+`"}]}}`)
	if l := r.recv(t); string(fields(t, l)["id"]) != "9" || strings.Contains(l, `"error"`) {
		t.Fatalf("good result: %.300s", l)
	}
	if n := bodies(); n != 1 {
		t.Fatalf("%d bodies after one good stream, want 1", n)
	}
}

// storedBodies counts the bodies of the directory workspace dir: regular
// files named with 64 hex digits.
func storedBodies(t *testing.T, dir string) (n int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if _, herr := hex.DecodeString(d.Name()); herr == nil && len(d.Name()) == 64 && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStreamedUpstreamDiesMidMessage: a stdio upstream that ends, or whose
// pipe fails, in the middle of a long result being streamed into the
// workspace stores no body; the call gets an error and the session ends
// with ErrUpstreamClosed.
func TestStreamedUpstreamDiesMidMessage(t *testing.T) {
	for name, end := range map[string]error{"end": nil, "broken pipe": io.ErrUnexpectedEOF} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			r := newRawRigBuf(t, dir, 0, 64, func(p *Proxy) { p.streamAbove = 256 })
			r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`)
			r.upRecv(t)
			half := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 8*testThreshold)
			go func() {
				_, _ = io.WriteString(r.upOut, half)
				_ = r.upOut.CloseWithError(end)
			}()
			if l := r.recv(t); errCode(t, l) >= 0 || string(fields(t, l)["id"]) != "1" {
				t.Fatalf("the cut call: %.300s", l)
			}
			select {
			case err := <-r.done:
				r.done <- err // for the cleanup
				if !errors.Is(err, ErrUpstreamClosed) {
					t.Fatalf("session ended with %v, want ErrUpstreamClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the session outlived its upstream")
			}
			if n := r.proxy.streamed.Load(); n != 1 {
				t.Fatalf("%d payloads streamed, want 1: the test does not test streaming", n)
			}
			if n := storedBodies(t, dir); n != 0 {
				t.Fatalf("%d bodies stored from a message cut short", n)
			}
		})
	}
}
