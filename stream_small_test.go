package hybridctx_test

import (
	"bytes"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

// TestSmallStreamsDecideLikeBytes: a streamed result that ends within the
// in-memory bound (256 KiB) and one just past it get the same reference,
// notice and outcomes as the same bytes given as []byte, fresh and reused,
// and the outcome keeps no content (Consumed says what was read).
func TestSmallStreamsDecideLikeBytes(t *testing.T) {
	for _, n := range []int{2000, 256<<10 - 1, 256 << 10, 256<<10 + 1, 1 << 20} {
		data := jsonBody(n)
		byBytes := newEnv(t, 1024)
		want := mustOffload(t, byBytes.off, byBytes.ctx, data)
		e := newEnv(t, 1024)
		for i, wantOC := range []hybridctx.Outcome{hybridctx.Offloaded, hybridctx.ExistingReference} {
			out, err := e.off.OffloadReader(e.ctx, hybridctx.Call{Tool: "tool", ID: "call"}, bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%d bytes, stream %d: %v", n, i, err)
			}
			switch {
			case out.Outcome() != wantOC:
				t.Errorf("%d bytes, stream %d: outcome %v, want %v", n, i, out.Outcome(), wantOC)
			case out.Ref != artifact.RefOf(data) || out.Notice != want.Notice:
				t.Errorf("%d bytes, stream %d: %v %q; bytes gave %v %q", n, i, out.Ref, out.Notice, want.Ref, want.Notice)
			case out.Consumed != int64(n) || out.Content() != nil:
				t.Errorf("%d bytes, stream %d: consumed %d, content %d bytes", n, i, out.Consumed, len(out.Content()))
			}
		}
		if out := mustOffload(t, e.off, e.ctx, data); out.Outcome() != hybridctx.ExistingReference {
			t.Errorf("%d bytes: the same bytes after the stream: %v", n, out.Outcome())
		}
	}
}

// TestSmallStreamMaxReadsAtMostOneMore: with a maximum below the in-memory
// bound, a stream is refused after max+1 bytes, not after the bound.
func TestSmallStreamMaxReadsAtMostOneMore(t *testing.T) {
	e := newEnv(t, 1000)
	off, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 1000, MaxArtifactBytes: 50_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := &endless{}
	out, err := off.OffloadReader(e.ctx, hybridctx.Call{}, src)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, out.Outcome(), out.Reason(), hybridctx.Failed, hybridctx.ExceedsMaxArtifactSize)
	if src.n != 50_001 || out.Consumed != 50_001 {
		t.Fatalf("read %d, consumed %d; want 50001", src.n, out.Consumed)
	}
	if e.inst.Counts().NewWriters != 0 {
		t.Fatal("a refused stream opened a writer")
	}
}
