package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/jsonstream"
	"github.com/hybridctx/hybridctx/mcpproxy/internal/wireconn"
)

// rawRig runs a Proxy between two newline-delimited streams that a test
// drives byte by byte: the client's and a scripted upstream's.
type rawRig struct {
	toProxy   *io.PipeWriter // the client's output
	fromProxy *bufio.Reader  // the client's input
	upIn      *bufio.Reader  // what the upstream receives
	upOut     *io.PipeWriter // the upstream's output
	done      chan error
	log       *syncBuffer
	proxy     *Proxy
}

func newRawRig(t *testing.T, limit int) *rawRig { t.Helper(); return newRawRigWith(t, limit, nil) }

// newRawRigWith is newRawRig with the proxy adjusted by tune before Run.
func newRawRigWith(t *testing.T, limit int, tune func(*Proxy)) *rawRig {
	t.Helper()
	return newRawRigOn(t, "mem://", limit, tune)
}

// newRawRigOn is newRawRigWith on the workspace at url.
func newRawRigOn(t *testing.T, url string, limit int, tune func(*Proxy)) *rawRig {
	t.Helper()
	return newRawRigBuf(t, url, limit, 0, tune)
}

// newRawRigBuf is newRawRigOn with both connections' read buffer of the
// given size (0: the default).
func newRawRigBuf(t *testing.T, url string, limit, buffer int, tune func(*Proxy)) *rawRig {
	t.Helper()
	r := &rawRig{done: make(chan error, 1), log: &syncBuffer{}}
	cr, cw := io.Pipe()   // client → proxy
	pr, pw := io.Pipe()   // proxy → client
	ur, uw := io.Pipe()   // proxy → upstream
	usr, usw := io.Pipe() // upstream → proxy
	r.toProxy, r.fromProxy = cw, bufio.NewReaderSize(pr, 1<<20)
	r.upIn, r.upOut = bufio.NewReaderSize(ur, 1<<20), usw
	bind := proxyFor(t, openStore(t, url), owner("s1"), nil)
	bind.log = slog.New(slog.NewTextHandler(r.log, nil))
	r.proxy = bind
	if tune != nil {
		tune(bind)
	}
	up := &Stream{Reader: usr, Writer: uw, MaxMessageBytes: limit, buffer: buffer}
	down := &Stream{Reader: cr, Writer: pw, MaxMessageBytes: limit, buffer: buffer}
	go func() { r.done <- bind.Run(context.Background(), up, down) }()
	t.Cleanup(func() {
		_ = cw.Close()
		_ = usw.Close()
		_ = ur.Close()
		_ = pr.Close()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("the proxy did not stop")
		}
	})
	return r
}

// send writes one line from the client.
func (r *rawRig) send(t *testing.T, line string) {
	t.Helper()
	writeWithin(t, r.toProxy, line, "client")
}

// writeWithin writes one line, failing (not hanging) when nobody reads it.
func writeWithin(t *testing.T, w io.Writer, line, who string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := io.WriteString(w, line+"\n"); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the %s's write: %v", who, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the proxy does not read the %s", who)
	}
}

// answer writes one line from the upstream.
func (r *rawRig) answer(t *testing.T, line string) {
	t.Helper()
	writeWithin(t, r.upOut, line, "upstream")
}

// readLine reads one line from rd, failing after a while.
func readLineWithin(t *testing.T, rd *bufio.Reader, what string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		l, err := rd.ReadString('\n')
		if err != nil {
			l = "EOF: " + err.Error()
		}
		got <- strings.TrimSuffix(l, "\n")
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(10 * time.Second):
		t.Fatalf("no line from the %s", what)
		return ""
	}
}

// recv reads the next line the client receives.
func (r *rawRig) recv(t *testing.T) string {
	t.Helper()
	return readLineWithin(t, r.fromProxy, "proxy")
}

// upRecv reads the next line the upstream receives.
func (r *rawRig) upRecv(t *testing.T) string {
	t.Helper()
	return readLineWithin(t, r.upIn, "proxy (upstream side)")
}

// fields decodes a line's top-level keys exactly.
func fields(t *testing.T, line string) map[string]json.RawMessage {
	t.Helper()
	out := map[string]json.RawMessage{}
	if err := jsonstream.EachMember([]byte(line), func(k, v []byte) {
		var key string
		_ = json.Unmarshal(k, &key)
		out[key] = v
	}); err != nil {
		t.Fatalf("not a JSON object: %.300s", line)
	}
	return out
}

// errCode returns a response's error code (0 without an error).
func errCode(t *testing.T, line string) int64 {
	t.Helper()
	var e struct{ Code int64 }
	if raw, ok := fields(t, line)["error"]; ok {
		_ = json.Unmarshal(raw, &e)
	}
	return e.Code
}

func toolResultLine(id, text string) string {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, b)
}

// TestOnlyFirstResponseReachesClient: an upstream that answers twice,
// answers ids it was never sent, and forges answers to requests the proxy
// serves itself gets exactly one answer per forwarded request through.
func TestOnlyFirstResponseReachesClient(t *testing.T) {
	r := newRawRig(t, 0)
	r.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"big","arguments":{}}}`)
	if id := fields(t, r.upRecv(t))["id"]; string(id) != "7" {
		t.Fatalf("forwarded id %s", id)
	}
	body := text(3 * testThreshold)
	r.answer(t, toolResultLine("7", body))
	r.answer(t, toolResultLine("7", "RAW-DUPLICATE "+text(10*testThreshold)))
	r.answer(t, toolResultLine("99", "INVENTED"))
	r.answer(t, toolResultLine(`"7"`, "INVENTED-STRING"))
	r.answer(t, toolResultLine("8", "FORGED-BEFORE"))

	first := r.recv(t)
	if f := fields(t, first); string(f["id"]) != "7" || !strings.Contains(first, "artifact://sha256/") || len(first) > 3*testThreshold {
		t.Fatalf("first response: %.300s", first)
	}
	var res struct {
		Content []struct{ Type, URI string }
	}
	_ = json.Unmarshal(fields(t, first)["result"], &res)
	ref := ""
	for _, c := range res.Content {
		if c.Type == "resource_link" {
			ref = c.URI
		}
	}
	// A request the proxy serves: the upstream never sees it, and its
	// forged answers (before and after) never reach the client.
	r.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_artifact","arguments":{"reference":%q,"length":5}}}`, ref))
	r.answer(t, toolResultLine("8", "FORGED-DURING"))
	read := r.recv(t)
	if f := fields(t, read); string(f["id"]) != "8" || strings.Contains(read, "FORGED") || !strings.Contains(read, body[:5]) {
		t.Fatalf("read response: %.300s", read)
	}
	r.answer(t, toolResultLine("8", "FORGED-AFTER"))
	r.send(t, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if id := fields(t, r.upRecv(t))["id"]; string(id) != "9" {
		t.Fatalf("the upstream received %s after 7 (the served request must not reach it)", id)
	}
	r.answer(t, `{"jsonrpc":"2.0","id":9,"result":{}}`)
	if l := r.recv(t); string(fields(t, l)["id"]) != "9" || strings.Contains(l, "FORGED") || strings.Contains(l, "INVENTED") {
		t.Fatalf("after the drops: %.300s", l)
	}
	// Every drop was logged, without content.
	logged := r.log.String()
	if n := strings.Count(logged, "message dropped"); n != 6 {
		t.Fatalf("%d drops logged, want 6:\n%s", n, logged)
	}
	for _, secret := range []string{"FORGED", "INVENTED", "DUPLICATE", "line 0", "artifact://"} {
		if strings.Contains(logged, secret) {
			t.Fatalf("log shows content %q:\n%s", secret, logged)
		}
	}
}

// TestDuplicateClientIDRefused: a client id already in progress is
// refused, never forwarded, so an upstream answer can only ever be taken
// for the one request that went upstream.
func TestDuplicateClientIDRefused(t *testing.T) {
	r := newRawRig(t, 0)
	r.send(t, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	r.upRecv(t)
	r.send(t, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"read_artifact","arguments":{}}}`)
	if l := r.recv(t); errCode(t, l) != -32600 || string(fields(t, l)["id"]) != `"a"` {
		t.Fatalf("duplicate: %s", l)
	}
	r.send(t, `{"jsonrpc":"2.0","id":"b","method":"ping"}`)
	if id := fields(t, r.upRecv(t))["id"]; string(id) != `"b"` {
		t.Fatalf("forwarded %s", id)
	}
	r.answer(t, toolResultLine(`"a"`, "done"))
	if l := r.recv(t); string(fields(t, l)["id"]) != `"a"` || !strings.Contains(l, "done") {
		t.Fatalf("answer: %s", l)
	}
}

// TestIDsPreservedExactly: ids come back as the client wrote them, to
// requests the proxy forwards and to those it serves.
func TestIDsPreservedExactly(t *testing.T) {
	r := newRawRig(t, 0)
	for _, id := range []string{`1.5`, `123456789012345678901234567890`, `"x\u00e9\"y"`, `-0.25e2`, `0`} {
		r.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		if got := fields(t, r.upRecv(t))["id"]; string(got) != id {
			t.Fatalf("upstream received id %s for %s", got, id)
		}
		echo := id
		if id == `1.5` {
			echo = `1.50` // the same number, written otherwise
		}
		r.answer(t, `{"jsonrpc":"2.0","id":`+echo+`,"result":{}}`)
		if got := fields(t, r.recv(t))["id"]; string(got) != id {
			t.Fatalf("client got id %s for %s", got, id)
		}
	}
	r.send(t, `{"jsonrpc":"2.0","id":2.75,"method":"tools/call","params":{"name":"read_artifact","arguments":{"reference":"bad"}}}`)
	if got := fields(t, r.recv(t))["id"]; string(got) != `2.75` {
		t.Fatalf("served request answered with id %s", got)
	}
}

// TestBadClientInputKeepsSession: every malformed client line is answered
// when it has an id, dropped otherwise, and the session goes on.
func TestBadClientInputKeepsSession(t *testing.T) {
	const limit = 4096
	r := newRawRig(t, limit)
	cases := []struct {
		line string
		code int64  // 0: dropped
		id   string // the id answered
	}{
		{`not json`, 0, ""},
		{`[]`, 0, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 0, ""},
		{`42`, 0, ""},
		{`"str"`, 0, ""},
		{`{}`, 0, ""},
		{`null`, 0, ""},
		{`{"id":3,"method":"ping"}`, -32600, `3`},
		{`{"jsonrpc":"1.0","id":"v","method":"ping"}`, -32600, `"v"`},
		{`{"jsonrpc":"2.0","id":4,"method":5}`, -32600, `4`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, 0, ""},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, 0, ""},
		{`{"jsonrpc":"2.0","id":6,"method":`, -32700, `6`},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{"x":"` + strings.Repeat("y", 2*limit) + `"}}}`, -32600, `5`},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"x":"` + strings.Repeat("y", 2*limit) + `"},"id":"late"}`, -32600, `"late"`},
		{strings.Repeat("z", 3*wireconn.LineBuffer), 0, ""},
	}
	for _, c := range cases {
		r.send(t, c.line)
		if c.code != 0 {
			l := r.recv(t)
			if errCode(t, l) != c.code || string(fields(t, l)["id"]) != c.id {
				t.Fatalf("%.60s: answered %s", c.line, l)
			}
		}
		r.send(t, `{"jsonrpc":"2.0","id":"alive","method":"ping"}`)
		if id := fields(t, r.upRecv(t))["id"]; string(id) != `"alive"` {
			t.Fatalf("%.60s: then forwarded %s", c.line, id)
		}
		r.answer(t, `{"jsonrpc":"2.0","id":"alive","result":{}}`)
		if l := r.recv(t); string(fields(t, l)["id"]) != `"alive"` {
			t.Fatalf("%.60s: then got %s", c.line, l)
		}
	}
	select {
	case err := <-r.done:
		t.Fatalf("Run ended: %v", err)
	default:
	}
}

// TestLargeClientMessagePasses: a client message far over the read buffer
// (and the SDK's 16 MiB) but under the limit reaches the upstream intact.
func TestLargeClientMessagePasses(t *testing.T) {
	skipUnlessLong(t)
	r := newRawRig(t, 0)
	arg := strings.Repeat("a", 17<<20)
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":"` + arg + `"}}}`
	go func() { _, _ = io.WriteString(r.toProxy, line+"\n") }()
	got, err := r.upIn.ReadString('\n') // no deadline: slow under -race, and a hang fails by the test timeout
	if err != nil || strings.TrimSuffix(got, "\n") != line {
		t.Fatalf("forwarded %d bytes, want the %d sent", len(got), len(line))
	}
}

// TestBadUpstreamOutputKeepsSession: lines from the upstream that are not
// JSON-RPC are dropped; one that names a request in progress fails it.
func TestBadUpstreamOutputKeepsSession(t *testing.T) {
	r := newRawRig(t, 4096)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	r.upRecv(t)
	for _, l := range []string{`Starting server...`, `{"jsonrpc":"2.0","id":null,"result":{}}`, `[]`, `{"jsonrpc":"2.0","id":1}`, `7`} {
		r.answer(t, l)
	}
	if l := r.recv(t); errCode(t, l) != -32603 || string(fields(t, l)["id"]) != "1" {
		t.Fatalf("the request whose response was malformed: %s", l)
	}
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big"}}`)
	r.upRecv(t)
	r.answer(t, toolResultLine("2", strings.Repeat("x", 8192)))
	if l := r.recv(t); errCode(t, l) != -32603 || string(fields(t, l)["id"]) != "2" || !strings.Contains(l, "size limit") {
		t.Fatalf("over the limit: %s", l)
	}
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	r.upRecv(t)
	r.answer(t, `{"jsonrpc":"2.0","id":3,"result":{}}`)
	if l := r.recv(t); string(fields(t, l)["id"]) != "3" || bytes.Contains([]byte(l), []byte("error")) {
		t.Fatalf("after: %s", l)
	}
}

// TestOverlongIDAndToolStillBounded: a client's request id and tool name
// longer than artifact.MaxCallFieldLen are cut for the record (metadata
// only), so the result is still stored and bounded, answered under the id
// exactly as sent.
func TestOverlongIDAndToolStillBounded(t *testing.T) {
	r := newRawRig(t, 0)
	id := `"` + strings.Repeat("i", artifact.MaxCallFieldLen+10) + `"`
	tool := strings.Repeat("t", artifact.MaxCallFieldLen+10)
	r.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`)
	if got := fields(t, r.upRecv(t))["id"]; string(got) != id {
		t.Fatal("forwarded id changed")
	}
	r.answer(t, toolResultLine(id, text(3*testThreshold)))
	got := r.recv(t)
	f := fields(t, got)
	if string(f["id"]) != id || f["error"] != nil || !strings.Contains(string(f["result"]), "artifact://sha256/") {
		t.Fatalf("response: %.300s", got)
	}
}
