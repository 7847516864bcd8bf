package workload

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzReadWorkload feeds arbitrary bytes to the JSON Lines reader: it must
// not panic, every error must be a *LineError wrapping one of the format's
// sentinels, every item must be valid, and the items it yields must write
// and read back identical.
func FuzzReadWorkload(f *testing.F) {
	f.Add([]byte(`{"session":"s1","tool":"grep","call_id":"c1","content":"a\nb"}` + "\n"))
	f.Add([]byte(`{"session":"s","tool":"t","content_base64":"/wA="}` + "\r\n\n" + `{"session":"s","tool":"t","content":"\u00e9\ud800"}`))
	f.Add([]byte(`{"session":"s","tool":"t","content":"x","content_base64":"eA=="}`))
	f.Add([]byte("{\"session\":\"s\",\"tool\":\"t\",\"content\":\"\xff\"}"))
	// Keys of the workload's own, and a 1,536-byte call id.
	f.Add([]byte(`{"session":"s","tool":"t","kind":"json","content":"[]","meta":{"a":[1,null]}}` + "\n"))
	f.Add([]byte(`{"session":"s","tool":"t","call_id":"` + strings.Repeat("c", 1536) + `","content":"x"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), &ReaderOptions{MaxLineBytes: 1 << 12})
		var items []Item
		for {
			it, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) || !(errors.Is(err, ErrSyntax) || errors.Is(err, ErrField) || errors.Is(err, ErrLineTooLong)) {
					t.Fatalf("error of an unexpected kind: %v (%T)", err, err)
				}
				break
			}
			if err := it.Validate(); err != nil {
				t.Fatalf("Next returned an invalid item: %v", err)
			}
			items = append(items, it)
		}
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, it := range items {
			if err := w.Write(it); err != nil {
				t.Fatalf("Write of a read item: %v", err)
			}
		}
		back := NewReader(&buf, nil)
		for i, want := range items {
			got, err := back.Next()
			if err != nil {
				t.Fatalf("item %d did not read back: %v", i, err)
			}
			if got.Session != want.Session || got.Tool != want.Tool || got.CallID != want.CallID || !bytes.Equal(got.Content, want.Content) {
				t.Fatalf("item %d read back as %+v, want %+v", i, got, want)
			}
		}
		if _, err := back.Next(); err != io.EOF {
			t.Fatalf("after the written items: %v, want io.EOF", err)
		}
	})
}
