package httpup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

type sseEvent struct {
	id, event, data string
	size            int // the data's length as the stream carries it
}

// sseEvents parses an event stream the reference way, keeping the events
// with data. Each data line is taken without its trailing CRs, as the SDK
// reads it (it trims every CR and LF at a line's end), so a CR that ends a
// data line is not part of what reaches the SDK either way.
// sseEvents: the events of s with data, as the SDK reads them (trailing CRs
// trimmed); an event whose data is only CRs is kept when over limit (>= 0),
// since its data is then replaced by a placeholder.
func sseEvents(t *testing.T, s []byte, limit int) []sseEvent {
	var out []sseEvent
	err := scanEvents(bytes.NewReader(s), 0, func(id, event string, data []byte) bool {
		var lines []string
		for line := range strings.SplitSeq(string(data), "\n") {
			lines = append(lines, strings.TrimRight(line, "\r"))
		}
		if d := strings.Join(lines, "\n"); d != "" || (limit >= 0 && len(data) > limit) {
			out = append(out, sseEvent{id, event, d, len(data)})
		}
		return true
	})
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return out
}

// FuzzSSERebuild: the stream the SDK reads carries the same events as the
// server's (ids, names, data), whatever the line endings, comments, split
// reads and buffer boundaries; an event whose data is over the limit
// carries a placeholder instead.
func FuzzSSERebuild(f *testing.F) {
	for _, s := range []string{"", "data: {}\n\n", ": c\nid: 1\ndata: a\ndata: b\n\n", "data:x\r\n\r\n", "event: e\ndata\n\n",
		"data: a\rb\r\n\nid: 7\nretry: 5\ndata:  sp\n", "data: {\"id\":3,\"x\":\"0123456789012345678901234567890123456789\"}\n\n"} {
		f.Add([]byte(s), uint16(0), uint8(3))
		f.Add([]byte(s), uint16(20), uint8(1))
	}
	f.Add([]byte("data:\r\r"), uint16(1), uint8(0)) // data of CRs only, over the limit
	f.Fuzz(func(t *testing.T, s []byte, limit uint16, chunk uint8) {
		st := newLargeState(int(limit) - 1)
		if limit == 0 {
			st.limit = -1
		}
		b := &sseBody{st: st, br: bufio.NewReaderSize(chunkReader{bytes.NewReader(s), int(chunk%32) + 1}, 16), src: io.NopCloser(nil)}
		rebuilt, err := io.ReadAll(b)
		if err != nil {
			t.Fatal(err)
		}
		want := sseEvents(t, append(bytes.Clone(s), "\n\n"...), st.limit)
		got := sseEvents(t, rebuilt, -1)
		if len(got) != len(want) {
			t.Fatalf("%d events, want %d\n%q\n%q", len(got), len(want), s, rebuilt)
		}
		for i := range want {
			w, g := want[i], got[i]
			if st.limit >= 0 && w.size > st.limit {
				if !strings.Contains(g.data, string(st.mark)) || g.id != w.id || g.event != w.event {
					t.Fatalf("event %d over the limit: %+v, want a placeholder", i, g)
				}
				continue
			}
			if g.id != w.id || g.event != w.event || g.data != w.data {
				t.Fatalf("event %d: %+v, want %+v\n%q\n%q", i, g, w, s, rebuilt)
			}
		}
	})
}

// TestSSEFieldsBounded: an event's fields other than data are kept up to
// maxEventFields bytes; a field line beyond that is dropped whole, and the
// event's data, its other fields and the next event still arrive.
func TestSSEFieldsBounded(t *testing.T) {
	long := strings.Repeat("x", maxEventFields)
	in := "event: first\nid: " + long + "\ndata: {\"a\":1}\n\nid: 9\ndata: {\"b\":2}\n\n"
	b := &sseBody{st: newLargeState(-1), br: bufio.NewReaderSize(strings.NewReader(in), 64), src: io.NopCloser(nil)}
	rebuilt, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(rebuilt, []byte(long[:1024])) {
		t.Fatalf("the over-long id line was kept (%d bytes rebuilt)", len(rebuilt))
	}
	got := sseEvents(t, rebuilt, -1)
	want := []sseEvent{{event: "first", data: `{"a":1}`}, {id: "9", data: `{"b":2}`}}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %q", len(got), len(want), rebuilt)
	}
	for i := range want {
		if g, w := got[i], want[i]; g.id != w.id || g.event != w.event || g.data != w.data {
			t.Errorf("event %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestRequestID(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"v":"` + big + `"}}`: `"a-1"`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"id":7},"id":12}`:               `12`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:                          ``,
		`[{"id":1}]`: ``,
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/mcp", strings.NewReader(body))
		if got := string(requestID(req)); got != want {
			t.Errorf("%.60s: %q, want %q", body, got, want)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/mcp", io.NopCloser(strings.NewReader(`{"id":1}`)))
	if got := requestID(req); got != nil {
		t.Errorf("a body that cannot be read again: %q", got)
	}
}

func TestScanEvents(t *testing.T) {
	in := ": comment\r\nid: 7\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n" +
		"data:x\n\nevent: other\ndata: y\nid: 8\n\n\n" + "data: tail-without-blank-line"
	type ev struct{ id, event, data string }
	var got []ev
	err := scanEvents(strings.NewReader(in), 0, func(id, event string, data []byte) bool {
		got = append(got, ev{id, event, string(data)})
		return true
	})
	want := []ev{{"7", "message", "{\"a\":\n1}"}, {"7", "", "x"}, {"8", "other", "y"}}
	if err == nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, %v; want %v and the end of input", got, err, want)
	}
	err = scanEvents(strings.NewReader("data: "+strings.Repeat("z", 100)+"\n\n"), 50, func(string, string, []byte) bool { return true })
	if !errors.Is(err, errEventTooLarge) {
		t.Fatalf("oversized event: %v", err)
	}
	n := 0
	_ = scanEvents(strings.NewReader("data: 1\n\ndata: 2\n\n"), 0, func(string, string, []byte) bool { n++; return false })
	if n != 1 {
		t.Fatalf("fn returning false did not stop: %d", n)
	}
}

func FuzzScanEvents(f *testing.F) {
	for _, s := range []string{"", "data: {}\n\n", ": c\nid: 1\ndata: a\ndata: b\n\n", "data:x\r\n\r\n", "event: e\ndata\n\n"} {
		f.Add(s, 16)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		_ = scanEvents(strings.NewReader(s), limit, func(id, event string, data []byte) bool {
			if limit > 0 && len(data) > limit {
				t.Fatalf("event of %d bytes over the limit %d", len(data), limit)
			}
			if strings.ContainsAny(event, "\n") || strings.ContainsAny(id, "\n\x00") {
				t.Fatalf("field with a line break: %q %q", id, event)
			}
			return true
		})
	})
}
