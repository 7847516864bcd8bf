// Command mcpe2e measures one large tools/call end to end (.ci/bench-mcp-e2e.sh):
// a scripted MCP server answering it with one block of a chosen size and
// kind, over stdio or Streamable HTTP, and a minimal client making the call
// either directly or through a command (the proxy) and reporting the bytes
// received and the time taken. Neither side holds the payload: the server
// writes it as it generates it, the client counts it as it reads.
//
//	mcpe2e serve-stdio -size N -kind text|escaped|image
//	mcpe2e serve-http -addr 127.0.0.1:0 -size N -kind K [-sse]   (prints its URL)
//	mcpe2e call -url URL | -- command args...                     (prints "bytes seconds")
//
// The client decodes the response (encoding/json), as every MCP client
// must: the time is the call's, from the request to the decoded answer.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mcpe2e serve-stdio|serve-http|call ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve-stdio", "serve-http":
		err = serve(os.Args[1], os.Args[2:])
	case "call":
		err = call(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpe2e:", err)
		os.Exit(1)
	}
}

// payload writes the block's JSON-encoded payload: size bytes of plain
// text, of text with escapes and non-ASCII, or of binary data as base64.
func payload(w io.Writer, kind string, size int) error {
	switch kind {
	case "text", "escaped":
		raw := "line of a long tool result, plain ASCII text, as a log has it\n"
		if kind == "escaped" {
			raw = "ligne é ✓ 😀 \"quoted\" back\\slash\ttab \x01 ctrl\n"
		}
		enc, _ := json.Marshal(raw)
		rep := strings.Repeat(string(enc[1:len(enc)-1]), 1024)
		for left := size / len(raw); left > 0; left -= 1024 {
			if _, err := io.WriteString(w, rep[:min(left, 1024)*(len(enc)-2)]); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, strings.Repeat("x", size%len(raw)))
		return err
	case "image":
		enc := base64.NewEncoder(base64.StdEncoding, w)
		buf := make([]byte, 48<<10)
		x := uint32(2463534242)
		for left := size; left > 0; left -= len(buf) {
			for i := range buf {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				buf[i] = byte(x)
			}
			if _, err := enc.Write(buf[:min(left, len(buf))]); err != nil {
				return err
			}
		}
		return enc.Close()
	}
	return fmt.Errorf("unknown kind %q", kind)
}

// answer writes the server's answer to one request (nil for a
// notification).
func answer(w io.Writer, line []byte, kind string, size int) (bool, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return false, err
	}
	if m.ID == nil {
		return false, nil
	}
	head := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,`
	var err error
	switch m.Method {
	case "initialize":
		_, err = io.WriteString(w, head+`"result":{"protocolVersion":"`+m.Params.ProtocolVersion+
			`","capabilities":{"tools":{}},"serverInfo":{"name":"mcpe2e","version":"1"}}}`)
	case "tools/list":
		_, err = io.WriteString(w, head+`"result":{"tools":[{"name":"big","inputSchema":{"type":"object"}}]}}`)
	case "tools/call":
		block := `{"type":"text","text":"`
		if kind == "image" {
			block = `{"type":"image","mimeType":"image/png","data":"`
		}
		if _, err = io.WriteString(w, head+`"result":{"content":[`+block); err == nil {
			if err = payload(w, kind, size); err == nil {
				_, err = io.WriteString(w, `"}],"isError":false}}`)
			}
		}
	case "ping":
		_, err = io.WriteString(w, head+`"result":{}}`)
	default:
		_, err = io.WriteString(w, head+`"error":{"code":-32601,"message":"method not found"}}`)
	}
	return true, err
}

func serve(mode string, args []string) error {
	fs := flag.NewFlagSet(mode, flag.ContinueOnError)
	size := fs.Int("size", 1<<20, "payload bytes (decoded)")
	kind := fs.String("kind", "text", "text, escaped or image")
	addr := fs.String("addr", "127.0.0.1:0", "listen address (serve-http)")
	sse := fs.Bool("sse", false, "answer with an event stream (serve-http)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if mode == "serve-stdio" {
		out := bufio.NewWriterSize(os.Stdout, 256<<10)
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			wrote, err := answer(out, sc.Bytes(), *kind, *size)
			if err != nil {
				return err
			}
			if wrote {
				if err := out.WriteByte('\n'); err != nil {
					return err
				}
				if err := out.Flush(); err != nil {
					return err
				}
			}
		}
		return sc.Err()
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	_ = os.Stdout.Sync()
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		line, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		bw := bufio.NewWriterSize(w, 256<<10)
		var pre bytes.Buffer
		if *sse {
			w.Header().Set("Content-Type", "text/event-stream")
			pre.WriteString("event: message\ndata: ")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		// The status is written with the first byte of the answer.
		wrote, err := answer(&prefixed{w: bw, pre: pre.Bytes()}, line, *kind, *size)
		if err == nil && !wrote {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if *sse {
			_, _ = bw.WriteString("\n\n")
		}
		_ = bw.Flush()
	}))
}

// prefixed writes pre before the first bytes written to it.
type prefixed struct {
	w   io.Writer
	pre []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
	if p.pre != nil {
		if _, err := p.w.Write(p.pre); err != nil {
			return 0, err
		}
		p.pre = nil
	}
	return p.w.Write(b)
}

// call initializes a session and makes one tools/call, printing the bytes of
// its response and the seconds from the request to the response's end.
func call(args []string) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	url := fs.String("url", "", "the server's Streamable HTTP endpoint (else: the command after --)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	const (
		initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcpe2e","version":"1"}}}`
		initalized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
		toolsCall  = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{}}}`
	)
	var n int64
	var took time.Duration
	if *url != "" {
		session := ""
		post := func(msg string) (*http.Response, error) {
			req, _ := http.NewRequest(http.MethodPost, *url, strings.NewReader(msg))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
			}
			return http.DefaultClient.Do(req)
		}
		resp, err := post(initialize)
		if err != nil {
			return err
		}
		session = resp.Header.Get("Mcp-Session-Id")
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp, err = post(initalized); err != nil {
			return err
		}
		resp.Body.Close()
		start := time.Now()
		if resp, err = post(toolsCall); err != nil {
			return err
		}
		n, err = decode(resp.Body, resp.Header.Get("Content-Type") == "text/event-stream")
		resp.Body.Close()
		took = time.Since(start)
		if err != nil {
			return err
		}
	} else {
		if fs.NArg() == 0 {
			return errors.New("call needs -url or a command")
		}
		cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
		cmd.Stderr = os.Stderr
		in, _ := cmd.StdinPipe()
		outPipe, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			return err
		}
		out := bufio.NewReaderSize(outPipe, 256<<10)
		var err error
		line := func() (int64, error) { return decode(out, false) }
		if _, err := io.WriteString(in, initialize+"\n"); err != nil {
			return err
		}
		if _, err := line(); err != nil {
			return err
		}
		start := time.Now()
		if _, err := io.WriteString(in, initalized+"\n"+toolsCall+"\n"); err != nil {
			return err
		}
		n, err = line()
		took = time.Since(start)
		if err != nil {
			return err
		}
		in.Close()
		_ = cmd.Wait()
	}
	fmt.Printf("%d %.3f\n", n, took.Seconds())
	return nil
}

// decode reads one message (a line, or an event's data), decodes it as a
// client does, checks it is a response, and returns its length.
func decode(r io.Reader, sse bool) (int64, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 256<<10)
	}
	var msg []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
			return 0, err
		}
		if !sse {
			msg = line
			break
		}
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			msg = data
			break
		}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result any             `json:"result"`
		Error  any             `json:"error"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return 0, err
	}
	if m.Error != nil || m.Result == nil {
		return 0, fmt.Errorf("not a result: %.200s", msg)
	}
	return int64(len(msg)), nil
}
