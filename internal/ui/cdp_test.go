package ui_test

// A small client of the Chrome DevTools protocol over its websocket, enough
// to drive headless Chromium from the browser tests: launch, evaluate,
// wait for an element, take a screenshot.

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"
)

// findChromium returns the browser to drive, or "" when none is installed.
func findChromium() string {
	if p := os.Getenv("HYBRIDCTX_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is one headless Chromium and a connection to its first page.
type browser struct {
	t    *testing.T
	conn net.Conn
	rd   *bufio.Reader
	mu   sync.Mutex
	next int64
}

var devtoolsLine = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// launch starts Chromium (skipping the test when there is none) and
// attaches to its page.
func launch(t *testing.T) *browser {
	t.Helper()
	bin := findChromium()
	if bin == "" {
		t.Skip("no chromium installed (apt-get install chromium, or set HYBRIDCTX_CHROMIUM)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--remote-debugging-port=0",
		"--user-data-dir="+t.TempDir(), "--window-size=1200,820", "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Skipf("chromium does not start: %v", err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := devtoolsLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("chromium printed no DevTools address")
	}
	u, _ := url.Parse(wsURL)
	var targets []struct{ Type, WebSocketDebuggerURL string }
	for range 50 {
		resp, err := http.Get("http://" + u.Host + "/json/list")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
		}
		if err == nil && len(targets) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, tg := range targets {
		if tg.Type == "page" {
			b := &browser{t: t}
			b.dial(tg.WebSocketDebuggerURL)
			b.call("Page.enable", nil)
			b.call("Runtime.enable", nil)
			b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1200, "height": 820, "deviceScaleFactor": 1, "mobile": false})
			return b
		}
	}
	t.Fatal("chromium has no page")
	return nil
}

// dial opens the websocket (RFC 6455 client handshake).
func (b *browser) dial(ws string) {
	u, err := url.Parse(ws)
	if err != nil {
		b.t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { c.Close() })
	var k [16]byte
	_, _ = rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", u.RequestURI(), u.Host, key)
	b.rd = bufio.NewReaderSize(c, 1<<20)
	resp, err := http.ReadResponse(b.rd, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		b.t.Fatalf("websocket handshake: %v", err)
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		b.t.Fatal("websocket handshake: wrong accept key")
	}
	b.conn = c
}

// send writes one masked text frame.
func (b *browser) send(p []byte) error {
	h := []byte{0x81}
	switch n := len(p); {
	case n < 126:
		h = append(h, 0x80|byte(n))
	case n < 1<<16:
		h = append(h, 0x80|126, byte(n>>8), byte(n))
	default:
		h = binary.BigEndian.AppendUint64(append(h, 0x80|127), uint64(n))
	}
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	h = append(h, mask[:]...)
	m := make([]byte, len(p))
	for i := range p {
		m[i] = p[i] ^ mask[i%4]
	}
	_, err := b.conn.Write(append(h, m...))
	return err
}

// recv reads one whole message (joining continuation frames).
func (b *browser) recv() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(b.rd, h[:]); err != nil {
			return nil, err
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var x [2]byte
			if _, err := io.ReadFull(b.rd, x[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(x[:]))
		case 127:
			var x [8]byte
			if _, err := io.ReadFull(b.rd, x[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(x[:])
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(b.rd, p); err != nil {
			return nil, err
		}
		switch op := h[0] & 0x0f; op {
		case 0x8:
			return nil, errors.New("websocket closed")
		case 0x9, 0xa: // ping, pong: nothing to answer for a test
			continue
		}
		msg = append(msg, p...)
		if h[0]&0x80 != 0 {
			return msg, nil
		}
	}
}

// call sends one command and returns its result, skipping events.
func (b *browser) call(method string, params any) json.RawMessage {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	id := b.next
	req, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err := b.send(req); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
	_ = b.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		msg, err := b.recv()
		if err != nil {
			b.t.Fatalf("%s: %v", method, err)
		}
		var r struct {
			ID     int64
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if json.Unmarshal(msg, &r) != nil || r.ID != id {
			continue
		}
		if r.Error != nil {
			b.t.Fatalf("%s: %s", method, r.Error.Message)
		}
		return r.Result
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) into v.
func (b *browser) eval(expr string, v any) {
	b.t.Helper()
	res := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	var r struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct {
			Text      string
			Exception struct{ Description string }
		}
	}
	if err := json.Unmarshal(res, &r); err != nil {
		b.t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		b.t.Fatalf("%s: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if v != nil && len(r.Result.Value) > 0 {
		if err := json.Unmarshal(r.Result.Value, v); err != nil {
			b.t.Fatalf("%s: %v", expr, err)
		}
	}
}

// navigate loads a URL.
func (b *browser) navigate(u string) {
	b.t.Helper()
	b.call("Page.navigate", map[string]any{"url": u})
}

// waitFor waits until a JavaScript condition holds (the page renders
// after its API answers); it fails the test after 20 s.
func (b *browser) waitFor(cond string) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		b.eval("!!("+cond+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var body string
			b.eval("document.body ? document.body.innerText.slice(0, 2000) : ''", &body)
			b.t.Fatalf("timed out waiting for %s; the page shows:\n%s", cond, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// text returns an element's innerText ("" when absent).
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.eval(fmt.Sprintf("(document.querySelector(%q) || {innerText: ''}).innerText", sel), &s)
	return s
}

// click clicks an element.
func (b *browser) click(sel string) {
	b.t.Helper()
	b.eval(fmt.Sprintf("document.querySelector(%q).click()", sel), nil)
}

// fill sets an input's value as typing would.
func (b *browser) fill(sel, value string) {
	b.t.Helper()
	b.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event("input", {bubbles: true})); })()`, sel, value), nil)
}

// screenshot saves the viewport as a PNG under dir.
func (b *browser) screenshot(dir, name string) {
	b.t.Helper()
	res := b.call("Page.captureScreenshot", map[string]any{"format": "png"})
	var r struct{ Data string }
	if err := json.Unmarshal(res, &r); err != nil {
		b.t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/"+name, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
