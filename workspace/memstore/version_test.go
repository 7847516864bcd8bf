package memstore

import (
	"context"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

// TestVersionsDistinctAndStable: every commit and replace gives the
// body a version of its own, and a version read earlier keeps its text
// after later commits (it shares the committed body's memory, which never
// changes).
func TestVersionsDistinctAndStable(t *testing.T) {
	ctx := context.Background()
	s := New()
	commit := func(data []byte, key string, replace bool) string {
		t.Helper()
		w, _ := s.NewWriter(ctx)
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(ctx, key, replace); err != nil {
			t.Fatal(err)
		}
		info, err := s.Stat(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return info.Version
	}
	seen := map[string]string{}
	var first string
	for i := range 150 { // past the small numbers strconv keeps as constants
		data := []byte{byte(i), byte(i >> 8)}
		key := artifact.RefOf(data).Hex()
		v := commit(data, key, false)
		if i == 0 {
			first = v
		}
		if v == "" || seen[v] != "" {
			t.Fatalf("commit %d: version %q (also %q)", i, v, seen[v])
		}
		seen[v] = key
		if i%50 == 0 {
			rv := commit([]byte("other"), key, true)
			if rv == v || seen[rv] != "" {
				t.Fatalf("replace %d: version %q", i, rv)
			}
			seen[rv] = key
		}
	}
	if first != "1" {
		t.Fatalf("the first version read = %q, want 1", first)
	}
}
