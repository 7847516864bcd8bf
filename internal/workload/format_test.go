package workload

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r *Reader) ([]Item, error) {
	t.Helper()
	var out []Item
	for {
		it, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, it)
	}
}

func TestReadLines(t *testing.T) {
	in := `{"session": "s1", "tool": "grep", "call_id": "c1", "content": "hello\nworld"}

{"session":"s2","tool":"read_file","content_base64":"/wA="}` + "\r\n" + `{"call_id":"","tool":"x.y-z","session":"s1","content":""}`
	items, err := readAll(t, NewReader(strings.NewReader(in), nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{
		{Session: "s1", Tool: "grep", CallID: "c1", Content: []byte("hello\nworld")},
		{Session: "s2", Tool: "read_file", Content: []byte{0xff, 0}},
		{Session: "s1", Tool: "x.y-z", Content: []byte{}},
	}
	if len(items) != len(want) {
		t.Fatalf("got %d items, want %d", len(items), len(want))
	}
	for i := range want {
		g, w := items[i], want[i]
		if g.Session != w.Session || g.Tool != w.Tool || g.CallID != w.CallID || !bytes.Equal(g.Content, w.Content) {
			t.Errorf("item %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestReadErrors(t *testing.T) {
	cases := []struct {
		name, line string
		want       error
	}{
		{"not json", `hello`, ErrSyntax},
		{"array", `["s","t"]`, ErrSyntax},
		{"two values", `{"session":"s","tool":"t","content":""} {}`, ErrSyntax},
		{"misspelt content key", `{"session":"s","tool":"t","contents":""}`, ErrField},
		{"number content", `{"session":"s","tool":"t","content":5}`, ErrSyntax},
		{"cut", `{"session":"s","tool":"t","content":"abc`, ErrSyntax},
		{"invalid utf-8", "{\"session\":\"s\",\"tool\":\"t\",\"content\":\"\xff\"}", ErrSyntax},
		{"no session", `{"tool":"t","content":""}`, ErrField},
		{"no tool", `{"session":"s","content":""}`, ErrField},
		{"no content", `{"session":"s","tool":"t"}`, ErrField},
		{"both contents", `{"session":"s","tool":"t","content":"","content_base64":""}`, ErrField},
		{"bad base64", `{"session":"s","tool":"t","content_base64":"%%%"}`, ErrField},
		{"blank session", `{"session":"  ","tool":"t","content":""}`, ErrField},
		{"bad tool", `{"session":"s","tool":"a b","content":""}`, ErrField},
		{"empty tool", `{"session":"s","tool":"","content":""}`, ErrField},
		{"long tool", `{"session":"s","tool":"` + strings.Repeat("t", MaxToolNameLen+1) + `","content":""}`, ErrField},
		{"long call id", `{"session":"s","tool":"t","call_id":"` + strings.Repeat("c", MaxCallIDLen+1) + `","content":""}`, ErrField},
	}
	for _, tc := range cases {
		in := `{"session":"s","tool":"t","content":"first"}` + "\n" + tc.line + "\n"
		items, err := readAll(t, NewReader(strings.NewReader(in), nil))
		var le *LineError
		if !errors.Is(err, tc.want) || !errors.As(err, &le) || le.Line != 2 || len(items) != 1 {
			t.Errorf("%s: %d items, %v; want 1 item, then line 2: %v", tc.name, len(items), err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "first") {
			t.Errorf("%s: the error repeats content: %v", tc.name, err)
		}
	}
}

// TestReadAcceptsWhatTheLibraryAccepts: keys of a workload's own are
// ignored, whatever their values, and tool names and call ids may be as
// long as a workspace record stores.
func TestReadAcceptsWhatTheLibraryAccepts(t *testing.T) {
	long := strings.Repeat("c", 1536)
	in := `{"session":"s","tool":"t","call_id":"` + long + `","kind":"json","content":"{}"}` + "\n" +
		`{"extra":{"a":[1,{"b":null}]},"session":"s","tool":"` + strings.Repeat("t", MaxToolNameLen) +
		`","call_id":"` + strings.Repeat("é", MaxCallIDLen/2) + `","content_base64":"/w==","n":1.5e3}` + "\n"
	items, err := readAll(t, NewReader(strings.NewReader(in), nil))
	if err != nil || len(items) != 2 {
		t.Fatalf("read %d items, %v; want 2", len(items), err)
	}
	if items[0].CallID != long || string(items[0].Content) != "{}" {
		t.Errorf("item 0 = %+v", items[0])
	}
	if len(items[1].Tool) != MaxToolNameLen || len(items[1].CallID) != MaxCallIDLen || !bytes.Equal(items[1].Content, []byte{0xff}) {
		t.Errorf("item 1: tool %d bytes, call id %d bytes, content %q", len(items[1].Tool), len(items[1].CallID), items[1].Content)
	}
}

func TestReadStopsAtFirstError(t *testing.T) {
	r := NewReader(strings.NewReader("oops\n{\"session\":\"s\",\"tool\":\"t\",\"content\":\"\"}\n"), nil)
	_, err1 := r.Next()
	_, err2 := r.Next()
	if !errors.Is(err1, ErrSyntax) || err2 != err1 {
		t.Fatalf("Next after an error = %v, then %v; want the same error twice", err1, err2)
	}
}

func TestReadLineTooLong(t *testing.T) {
	line := `{"session":"s","tool":"t","content":"` + strings.Repeat("x", 200) + `"}`
	for _, max := range []int{len(line) - 1, 10} {
		_, err := readAll(t, NewReader(strings.NewReader(line+"\n"), &ReaderOptions{MaxLineBytes: max}))
		if !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("max %d: %v, want ErrLineTooLong", max, err)
		}
	}
	// Exactly at the limit, with CRLF, through a reader that returns one
	// byte at a time (so the line spans many buffer fills).
	items, err := readAll(t, NewReader(iotest.OneByteReader(strings.NewReader(line+"\r\n")), &ReaderOptions{MaxLineBytes: len(line)}))
	if err != nil || len(items) != 1 || len(items[0].Content) != 200 {
		t.Fatalf("a line at the limit: %d items, %v", len(items), err)
	}
}

func TestReadSourceError(t *testing.T) {
	boom := errors.New("disk gone")
	_, err := readAll(t, NewReader(iotest.ErrReader(boom), nil))
	if !errors.Is(err, boom) {
		t.Fatalf("a failing source: %v", err)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	items := []Item{
		{Session: "s", Tool: "t", CallID: "c", Content: []byte("plain <html> & \"quotes\" \u2028 é\n")},
		{Session: "s", Tool: "t", Content: []byte{0xff, 0xfe, 0, 1}},
		{Session: "s", Tool: "t", Content: nil},
		{Session: "日本", Tool: "a.b-c_d", CallID: "é", Content: []byte("\x00\x1f")},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, it := range items {
		if err := w.Write(it); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Count(buf.String(), "\n") != len(items) || !strings.Contains(buf.String(), `"content_base64":"//4AAQ=="`) {
		t.Fatalf("written form:\n%s", buf.String())
	}
	got, err := readAll(t, NewReader(&buf, nil))
	if err != nil || len(got) != len(items) {
		t.Fatalf("read back %d items: %v", len(got), err)
	}
	for i := range items {
		if got[i].Session != items[i].Session || got[i].Tool != items[i].Tool || got[i].CallID != items[i].CallID ||
			!bytes.Equal(got[i].Content, items[i].Content) {
			t.Errorf("item %d read back as %+v", i, got[i])
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("full") }

func TestWriteErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := NewWriter(&buf).Write(Item{Session: "s", Tool: "bad tool"}); !errors.Is(err, ErrField) || buf.Len() != 0 {
		t.Fatalf("Write of an invalid item: %v (%d bytes written)", err, buf.Len())
	}
	if err := NewWriter(failWriter{}).Write(Item{Session: "s", Tool: "t"}); err == nil {
		t.Fatal("Write to a failing writer succeeded")
	}
}
