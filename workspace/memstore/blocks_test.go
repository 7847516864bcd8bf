package memstore

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/hybridctx/hybridctx/artifact"
)

// TestBlocksReadBack: a body written in pieces of every size (so that it
// spans several blocks) reads back
// exactly, whole and at every range.
func TestBlocksReadBack(t *testing.T) {
	ctx := context.Background()
	s := New()
	w, _ := s.NewWriter(ctx)
	want := []byte{}
	for i, n := range []int{1, 7, 300 << 10, 0, 5, 1 << 20, 64 << 10, 3, 5 << 20, 9} {
		p := bytes.Repeat([]byte{byte(i)}, n)
		if k, err := w.Write(p); k != n || err != nil {
			t.Fatal(k, err)
		}
		want = append(want, p...)
	}
	key := artifact.RefOf(want).Hex()
	if err := w.Commit(ctx, key, false); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if r.Info().Size != int64(len(want)) {
		t.Fatal(r.Info().Size)
	}
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(want))
	}
	ra := r.(io.ReaderAt)
	for _, off := range []int{0, 1, 8, 300<<10 + 7, 300<<10 + 8, len(want) - 10, len(want) - 1} {
		p := make([]byte, 2<<20)
		n, err := ra.ReadAt(p, int64(off))
		end := min(len(want), off+len(p))
		if n != end-off || !bytes.Equal(p[:n], want[off:end]) || (end < off+len(p)) != (err == io.EOF) {
			t.Fatalf("ReadAt %d: %d bytes, %v", off, n, err)
		}
	}
	if n, err := ra.ReadAt(make([]byte, 1), int64(len(want))); n != 0 || err != io.EOF {
		t.Fatal(n, err)
	}
	if _, err := ra.ReadAt(make([]byte, 1), -1); err == nil {
		t.Fatal("negative offset accepted")
	}
}
