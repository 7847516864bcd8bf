package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybridctx/hybridctx/mcpproxy/internal/wiremsg"
)

// escapedText returns n bytes of text that JSON escapes heavily: quotes,
// backslashes, control characters, and non-ASCII (two-, three- and
// four-byte UTF-8).
func escapedText(n int) string {
	const unit = "ligne é ✓ 😀 \"quoted\" back\\slash\ttab \x01 ctrl\n"
	return strings.Repeat(unit, n/len(unit)+1)[:n-n%len(unit)]
}

// bigServer is a go-sdk MCP server with a large text tool, a large image
// tool and a small one.
func bigServer(n int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	add := func(name string, res *mcp.CallToolResult) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return res, nil
		})
	}
	add("text", textResult(escapedText(n)))
	add("image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: binary(n), MIMEType: "image/png"}}})
	add("small", textResult("hello"))
	return s
}

// httpServers are the ways a server speaks HTTP: Streamable HTTP answering
// with an event stream or a JSON body, and the older HTTP+SSE transport.
var httpServers = map[string]func(*mcp.Server) http.Handler{
	"sse": func(s *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	},
	"json": func(s *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	},
	"sse fallback": func(s *mcp.Server) http.Handler {
		return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	},
}

// httpRig connects an in-memory client through a proxy (tuned by tune) to h
// over HTTP, with limit as the upstream's message limit.
func httpRig(t *testing.T, h http.Handler, limit int, tune func(*Proxy)) *rig {
	t.Helper()
	return httpRigOn(t, "mem://", h, limit, tune)
}

// httpRigOn is httpRig on the workspace at url.
func httpRigOn(t *testing.T, url string, h http.Handler, limit int, tune func(*Proxy)) *rig {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p := proxyFor(t, openStore(t, url), owner("h1"), nil)
	if tune != nil {
		tune(p)
	}
	proxyT, clientT := mcp.NewInMemoryTransports()
	r := &rig{proxy: p, done: make(chan error, 1)}
	go func() {
		r.done <- p.Run(context.Background(), &HTTPUpstream{URL: srv.URL, MaxMessageBytes: limit}, proxyT)
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), clientT, nil)
	if err != nil {
		t.Fatalf("%v (proxy: %v)", err, <-r.done)
	}
	r.cs = cs
	t.Cleanup(func() { _ = cs.Close(); <-r.done })
	return r
}

func streamSmall(p *Proxy) { p.streamAbove = streamTestAbove }
func streamNever(p *Proxy) { p.streamAbove = 1 << 40 }

// TestHTTPUpstreamStreamsLargeResults: a large text (with escapes and
// non-ASCII) or image result from a go-sdk server over each HTTP transport
// is streamed into the workspace: the client gets the same bounded result
// as when the message is decoded whole, and the stored body is the exact
// payload.
func TestHTTPUpstreamStreamsLargeResults(t *testing.T) {
	skipUnlessLong(t)
	const n = 300 << 10 // several times the SSE read buffer
	want := map[string][]byte{"text": []byte(escapedText(n)), "image": binary(n)}
	for mode, handler := range httpServers {
		t.Run(mode, func(t *testing.T) {
			streamed := httpRig(t, handler(bigServer(n)), 0, streamSmall)
			whole := httpRig(t, handler(bigServer(n)), 0, streamNever)
			for _, tool := range []string{"text", "image"} {
				got, ref := streamed.call(t, tool, nil), whole.call(t, tool, nil)
				if dump(got) != dump(ref) {
					t.Fatalf("%s: streamed %s\nwhole %s", tool, dump(got), dump(ref))
				}
				sum := sha256.Sum256(want[tool])
				if uri := linkOf(t, got).URI; uri != "artifact://sha256/"+hex.EncodeToString(sum[:]) {
					t.Fatalf("%s: link %s is not the payload's digest", tool, uri)
				}
			}
			if body := streamed.readAll(t, linkOf(t, streamed.call(t, "text", nil)).URI, testBudget); !bytes.Equal(body, want["text"]) {
				t.Fatalf("read back %d bytes, differing from the %d sent", len(body), n)
			}
			if s, w := streamed.proxy.streamed.Load(), whole.proxy.streamed.Load(); s != 3 || w != 0 {
				t.Fatalf("streamed %d and %d payloads, want 3 and 0", s, w)
			}
			if got := texts(streamed.call(t, "small", nil)); len(got) != 1 || got[0] != "hello" {
				t.Fatalf("small after large: %v", got)
			}
		})
	}
}

// TestHTTPUpstreamOverLimit: a response over the message limit gets the
// size error (streaming or not) and the session goes on.
func TestHTTPUpstreamOverLimit(t *testing.T) {
	const n = 300 << 10
	for mode, handler := range httpServers {
		for tuning, tune := range map[string]func(*Proxy){"streaming": streamSmall, "whole": streamNever} {
			t.Run(mode+"/"+tuning, func(t *testing.T) {
				r := httpRig(t, handler(bigServer(n)), 64<<10, tune)
				for range 2 {
					_, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "text", Arguments: map[string]any{}})
					if err == nil || !strings.Contains(err.Error(), "exceeds the message size limit") {
						t.Fatalf("over the limit: %v", err)
					}
					if got := texts(r.call(t, "small", nil)); len(got) != 1 || got[0] != "hello" {
						t.Fatalf("after the refusal: %v", got)
					}
				}
			})
		}
	}
}

// TestHTTPUpstreamOverLimitWithoutProxy: an SDK client using HTTPUpstream
// directly gets an over-limit response as an error of that call only.
func TestHTTPUpstreamOverLimitWithoutProxy(t *testing.T) {
	srv := httptest.NewServer(httpServers["sse"](bigServer(300 << 10)))
	defer srv.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(),
		&HTTPUpstream{URL: srv.URL, MaxMessageBytes: 64 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "text"}); err == nil || !strings.Contains(err.Error(), "size limit") {
		t.Fatalf("over the limit: %v", err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "small"})
	if err != nil || texts(res)[0] != "hello" {
		t.Fatalf("after: %v %v", res, err)
	}
}

// scriptedHTTP is a minimal Streamable HTTP MCP server: it answers
// initialize and tools/list, and answers tools/call with result(w, id)
// written as one JSON body, or as one server-sent event when sse is set.
func scriptedHTTP(sse bool, result func(w io.Writer, id json.RawMessage)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.NewDecoder(r.Body).Decode(&m) != nil || m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		answer := func(body func(io.Writer)) {
			bw := bufio.NewWriter(w)
			if sse {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(bw, "event: message\nid: 1\ndata: ")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			body(bw)
			if sse {
				_, _ = io.WriteString(bw, "\n\n")
			}
			_ = bw.Flush()
		}
		one := func(s string) func(io.Writer) {
			return func(w io.Writer) { _, _ = io.WriteString(w, s) }
		}
		id := string(m.ID)
		switch m.Method {
		case "initialize":
			answer(one(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"` + m.Params.ProtocolVersion +
				`","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}}`))
		case "tools/list":
			answer(one(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"big","inputSchema":{"type":"object"}}]}}`))
		case "tools/call":
			answer(func(w io.Writer) { result(w, m.ID) })
		default:
			answer(one(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`))
		}
	})
}

// TestHTTPStreamedMemoryFlat: a 64 MiB text result from an HTTP upstream,
// as a JSON body or as an event, goes through the proxy (the real streaming
// length) allocating a small fraction of its size.
func TestHTTPStreamedMemoryFlat(t *testing.T) {
	skipUnlessLong(t)
	const size = 64 << 20
	for _, sse := range []bool{false, true} {
		h := scriptedHTTP(sse, func(w io.Writer, id json.RawMessage) {
			_, _ = io.Copy(w, io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"content":[{"type":"text","text":"`),
				&patternReader{n: size}, strings.NewReader(`"}],"isError":false}}`)))
		})
		r := httpRigOn(t, t.TempDir(), h, 0, nil)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := r.call(t, "big", nil)
		runtime.ReadMemStats(&after)
		if !strings.HasPrefix(linkOf(t, res).URI, "artifact://sha256/") || r.proxy.streamed.Load() != 1 {
			t.Fatalf("answer: %s", dump(res))
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
			t.Fatalf("sse %v: allocated %d MiB for a %d MiB result", sse, alloc>>20, size>>20)
		} else {
			t.Logf("sse %v: allocated %.1f MiB for a %d MiB result", sse, float64(alloc)/(1<<20), size>>20)
		}
	}
}

// TestHTTPSpooledIDLast: a large result whose id comes after it (as some
// servers write) is streamed from an HTTP upstream too.
func TestHTTPSpooledIDLast(t *testing.T) {
	text := escapedText(200 << 10)
	for _, sse := range []bool{false, true} {
		h := scriptedHTTP(sse, func(w io.Writer, id json.RawMessage) {
			b, _ := json.Marshal(text)
			_, _ = io.WriteString(w, `{"result":{"content":[{"type":"text","text":`+string(b)+`}]},"jsonrpc":"2.0","id":`+string(id)+`}`)
		})
		dir := t.TempDir()
		r := httpRig(t, h, 0, func(p *Proxy) { p.streamAbove, p.tempDir = streamTestAbove, dir })
		res := r.call(t, "big", nil)
		sum := sha256.Sum256([]byte(text))
		if linkOf(t, res).URI != "artifact://sha256/"+hex.EncodeToString(sum[:]) || r.proxy.streamed.Load() != 1 {
			t.Fatalf("sse %v: %s (streamed %d)", sse, dump(res), r.proxy.streamed.Load())
		}
	}
}

// TestHTTPStreamedExactID: a client id the SDK cannot hold (2.50) goes
// upstream under a stand-in; the streamed result, and an over-limit
// refusal, still answer the client's id exactly as written.
func TestHTTPStreamedExactID(t *testing.T) {
	srv := httptest.NewServer(httpServers["sse"](bigServer(300 << 10)))
	defer srv.Close()
	for _, limit := range []int{0, 64 << 10} {
		p := proxyFor(t, openStore(t, "mem://"), owner("h1"), nil)
		p.streamAbove = streamTestAbove
		cr, cw := io.Pipe()
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- p.Run(context.Background(), &HTTPUpstream{URL: srv.URL, MaxMessageBytes: limit}, &Stream{Reader: cr, Writer: pw})
		}()
		out := bufio.NewReader(pr)
		send := func(line string) {
			if _, err := io.WriteString(cw, line+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		// Lines are read with a deadline: an answer lost to a broken id
		// translation fails the test instead of hanging it.
		send(initialize)
		if l := readLineWithin(t, out, "proxy"); !strings.Contains(l, `"id":1`) {
			t.Fatalf("initialize: %q", l)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":2.50,"method":"tools/call","params":{"name":"text","arguments":{}}}`)
		l := readLineWithin(t, out, "proxy")
		if strings.HasPrefix(l, "EOF: ") || string(fields(t, l)["id"]) != "2.50" {
			t.Fatalf("limit %d: %.300q", limit, l)
		}
		t.Logf("%d %.200s", limit, l)
		if limit == 0 && (!strings.Contains(l, "artifact://sha256/") || p.streamed.Load() != 1) {
			t.Fatalf("not streamed: %.300s", l)
		}
		if limit > 0 && !strings.Contains(l, "size limit") {
			t.Fatalf("over the limit: %.300s", l)
		}
		_ = cw.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// cutAfter passes a server's answers through, except that the body of an
// answer to a tools/call of tool is cut after n bytes and the connection
// dropped, as a server that dies mid-message would.
func cutAfter(h http.Handler, tool string, n int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/call"`)) || !bytes.Contains(body, []byte(`"name":"`+tool+`"`)) {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes()[:n])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
}

// TestHTTPStreamedCutMidMessage: an upstream that drops the connection
// while a long result streams into the workspace costs that call an error
// and stores no body (the bytes that came are no result). Over an event
// stream the SDK's client resumes and the session goes on; a JSON body
// cut short fails the SDK's connection, and the session ends with
// ErrUpstreamClosed.
func TestHTTPStreamedCutMidMessage(t *testing.T) {
	skipUnlessLong(t)
	const n = 300 << 10
	for _, mode := range []string{"sse", "json"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			r := httpRigOn(t, dir, cutAfter(httpServers[mode](bigServer(n)), "text", n/2), 0, streamSmall)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "text", Arguments: map[string]any{}})
			switch {
			case err == nil:
				t.Fatalf("a cut result was answered: %s", dump(res))
			case ctx.Err() != nil:
				t.Fatalf("no answer to a cut result: %v", err)
			case mode == "sse" && !strings.Contains(err.Error(), wiremsg.ErrCutShort.Message):
				t.Fatalf("a cut result: %v, want %q", err, wiremsg.ErrCutShort.Message)
			}
			if s := r.proxy.streamed.Load(); s != 1 {
				t.Fatalf("%d payloads streamed, want 1: the test does not test streaming", s)
			}
			if got := storedBodies(t, dir); got != 0 {
				t.Fatalf("%d bodies stored from a cut message", got)
			}
			if mode == "json" {
				select {
				case err := <-r.done:
					r.done <- err // for the cleanup
					if !errors.Is(err, ErrUpstreamClosed) {
						t.Fatalf("session ended with %v, want ErrUpstreamClosed", err)
					}
				case <-ctx.Done():
					t.Fatal("the session outlived its failed upstream connection")
				}
				return
			}
			if got := texts(r.call(t, "small", nil)); len(got) != 1 || got[0] != "hello" {
				t.Fatalf("after the cut: %v", got)
			}
			if got := texts(r.call(t, "image", nil)); len(got) != 1 || storedBodies(t, dir) != 1 {
				t.Fatalf("a whole long result after the cut: %v, %d bodies", got, storedBodies(t, dir))
			}
		})
	}
}
