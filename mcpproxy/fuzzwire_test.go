package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/bound"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

const (
	fuzzLimit    = 4 * testThreshold // both sides' message limit
	sentinelLine = `{"jsonrpc":"2.0","id":"hybridctx-fuzz-sentinel-7f3a","method":"ping"}`
	sentinelID   = `"hybridctx-fuzz-sentinel-7f3a"`
)

// FuzzProxyWire feeds arbitrary bytes to both sides of a proxy session, then
// a ping from the client: the session must survive and answer it, nothing
// over the limit reaches the client, every tools/call result is bounded,
// and no request is answered twice.
func FuzzProxyWire(f *testing.F) {
	big := strings.Repeat("x", 2*testThreshold)
	for _, s := range [][2]string{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}`, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + big + `"}]}}` + "\n" + `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"not json\n[]\n42\n{}\n", "garbage\n{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}\n"},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"read_artifact","arguments":{}}}`, `{"jsonrpc":"2.0","id":1.5,"result":{"content":[]}}`},
		{`{"jsonrpc":"2.0","id":"a","method":"x","params":{"p":"` + strings.Repeat("y", 2*fuzzLimit) + `"}}`, `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`},
		{`{"jsonrpc":"2.0","id":2,"method":`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}`},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, `{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{}}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, client, upstream []byte) {
		if len(client) > 4*fuzzLimit || len(upstream) > 4*fuzzLimit {
			return
		}
		runWireSession(t, client, upstream)
	})
}

// runWireSession runs one fuzzed session and checks what the client got.
func runWireSession(t *testing.T, client, upstream []byte) {
	p := proxyFor(t, openStore(t, "mem://"), owner("s1"), nil)
	buffer := 0
	if len(client)%2 == 1 {
		// Every line past 256 bytes read as a long one (internal/wiremsg/large.go), with
		// its params or result spooled.
		p.streamAbove, buffer = 256, 64
	}
	cr, cw := io.Pipe()
	pr, pw := io.Pipe()
	ur, uw := io.Pipe()
	usr, usw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- p.Run(context.Background(), &Stream{Reader: usr, Writer: uw, MaxMessageBytes: fuzzLimit, buffer: buffer},
			&Stream{Reader: cr, Writer: pw, MaxMessageBytes: fuzzLimit, buffer: buffer})
	}()
	// The upstream: writes its fuzzed bytes, reads everything, answers the
	// sentinel.
	go func() { _, _ = usw.Write(append(append([]byte(nil), upstream...), '\n')) }()
	go func() {
		br := bufio.NewReader(ur)
		for {
			l, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			if bytes.Contains(l, []byte(sentinelID)) && bytes.Contains(l, []byte(`"ping"`)) {
				_, _ = io.WriteString(usw, `{"jsonrpc":"2.0","id":`+sentinelID+`,"result":{}}`+"\n")
			}
		}
	}()
	go func() { _, _ = cw.Write(append(append(append([]byte(nil), client...), '\n'), sentinelLine+"\n"...)) }()

	lines := make(chan []byte)
	go func() {
		br := bufio.NewReader(pr)
		for {
			l, err := br.ReadBytes('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- l
		}
	}()
	sent := clientRequests(client)
	answered := map[string]int{}
	deadline := time.After(20 * time.Second)
	for alive := false; !alive; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the proxy closed the client's stream")
			}
			alive = checkClientLine(t, l, sent, answered)
		case err := <-done:
			t.Fatalf("the session ended: %v", err)
		case <-deadline:
			t.Fatal("no answer to the sentinel: the session hangs")
		}
	}
	_ = cw.Close()
	_ = usw.Close()
	go func() {
		for range lines {
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the proxy did not stop")
	}
	_ = ur.Close()
	_ = pr.Close()
}

// clientRequests returns, by id key, how many requests the client sent and
// whether any was a tools/call.
func clientRequests(client []byte) map[string][2]int {
	out := map[string][2]int{}
	for _, l := range bytes.Split(client, []byte("\n")) {
		m, err := wiremsg.Parse(l)
		var id json.RawMessage
		switch {
		case err == nil && m.IsRequest():
			id = m.ID
		case err != nil:
			if b, ok := err.(*wiremsg.Bad); ok {
				id = b.ID
			}
		}
		if key, ok := wiremsg.IDKey(id); ok {
			c := out[key]
			c[0]++
			var p struct{ Name string }
			if err == nil && m.Name == methodToolsCall && (json.Unmarshal(m.Params, &p) != nil || p.Name != "read_artifact") {
				c[1] = 1 // a read's answer is recovered content, bounded by the budget instead
			}
			out[key] = c
		}
	}
	return out
}

// checkClientLine checks one line the client received and reports whether
// it is the sentinel's answer.
func checkClientLine(t *testing.T, l []byte, sent map[string][2]int, answered map[string]int) bool {
	t.Helper()
	l = bytes.TrimSuffix(l, []byte("\n"))
	if len(l) > fuzzLimit {
		t.Fatalf("a %d-byte message reached the client (limit %d)", len(l), fuzzLimit)
	}
	m, err := wiremsg.Parse(l)
	if err != nil {
		t.Fatalf("the client got a malformed message: %v: %.200s", err, l)
	}
	if m.IsCall() {
		return false
	}
	if string(m.ID) == sentinelID {
		return true
	}
	key, _ := wiremsg.IDKey(m.ID)
	answered[key]++
	if answered[key] > sent[key][0] {
		t.Fatalf("id %s answered %d times for %d requests", m.ID, answered[key], sent[key][0])
	}
	if sent[key][1] == 1 && m.Result != nil {
		if err := bound.CheckParts(m.Result, testThreshold); err != nil {
			t.Fatal(err)
		}
	}
	return false
}
