package httpup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The standalone stream of a Streamable HTTP upstream: a GET on the endpoint
// carrying what the server sends outside any request (list changes,
// resource updates, requests of its own). The SDK's client transport opens
// it only for its own client sessions, so the proxy opens it itself once
// the upstream session exists.

// standaloneRetries bounds the consecutive failed attempts to (re)open the
// standalone stream.
const standaloneRetries = 5

// standaloneDelay is the wait before reopening the standalone stream.
var standaloneDelay = time.Second

// runStandalone keeps the standalone stream of session open until ctx ends,
// the server refuses it, or it failed standaloneRetries times in a row;
// every message goes to out.
func (c *Conn) runStandalone(ctx context.Context, session string, out chan<- jsonrpc.Message) {
	lastID := ""
	for failures := 0; failures < standaloneRetries && ctx.Err() == nil; {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.t.URL, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := c.client.Do(req)
		if err == nil {
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
				// 405 and friends: the server offers no standalone stream.
				resp.Body.Close()
				return
			}
			n := 0
			lastID, n = readEvents(ctx, resp.Body, 0, lastID, out) // bounded by c.big
			resp.Body.Close()
			if n > 0 {
				failures = 0
			}
		}
		failures++
		t := time.NewTimer(standaloneDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// errEventTooLarge means a server-sent event exceeded the message limit.
var errEventTooLarge = errors.New("server-sent event over the message limit")

// readEvents reads server-sent events from r until it ends, sending the data
// of every "message" event that decodes as one JSON-RPC message to out. It
// returns the last event id seen (lastID when none) and how many messages it
// sent. Events over limit bytes (when limit > 0) end the read.
func readEvents(ctx context.Context, r io.Reader, limit int, lastID string, out chan<- jsonrpc.Message) (string, int) {
	sent := 0
	_ = scanEvents(r, limit, func(id, event string, data []byte) bool {
		if id != "" {
			lastID = id
		}
		if event != "" && event != "message" {
			return true
		}
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return true // not a message: dropped
		}
		select {
		case out <- msg:
			sent++
			return true
		case <-ctx.Done():
			return false
		}
	})
	return lastID, sent
}

// scanEvents parses a text/event-stream (the WHATWG server-sent events
// format: "field: value" lines, events ended by a blank line, ":" comments)
// and calls fn for each event with data; fn returns false to stop. An event
// whose data exceeds limit bytes (limit > 0) is an error.
func scanEvents(r io.Reader, limit int, fn func(id, event string, data []byte) bool) error {
	br := bufio.NewReader(r)
	var data bytes.Buffer
	var id, event string
	hasData := false
	for {
		line, err := readEventLine(br, limit)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			if hasData && !fn(id, event, data.Bytes()) {
				return nil
			}
			data.Reset()
			event, hasData = "", false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			if limit > 0 && data.Len()+len(value) > limit {
				return errEventTooLarge
			}
			data.Write(value)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				id = string(value)
			}
		case "event":
			event = string(value)
		}
	}
}

// readEventLine reads one line without its ending (LF, CRLF or CR before LF),
// at most limit bytes long when limit > 0.
func readEventLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if limit > 0 && len(line) > limit+2 {
			return nil, errEventTooLarge
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 && errors.Is(err, io.EOF) {
			break
		}
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}
