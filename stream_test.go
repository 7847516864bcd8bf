package hybridctx_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hybridctx/hybridctx"
	"github.com/hybridctx/hybridctx/artifact"
)

// endless yields 'e' forever and counts what it gave.
type endless struct{ n int64 }

func (r *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'e'
	}
	r.n += int64(len(p))
	return len(p), nil
}

func TestStreamDecidesAfterThresholdPlusOne(t *testing.T) {
	e := newEnv(t, 1000)
	nob, _ := hybridctx.NewOffloader(nil, hybridctx.Policy{InlineThreshold: 1000}, nil)
	src := &endless{}
	out, err := nob.OffloadReader(e.ctx, hybridctx.Call{}, src)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, out.Outcome(), out.Reason(), hybridctx.Failed, hybridctx.NoAuthorizedWorkspace)
	if src.n != 1001 || out.Consumed != 1001 {
		t.Fatalf("read %d, consumed %d; want 1001", src.n, out.Consumed)
	}
}

func TestStreamInlineAndStored(t *testing.T) {
	e := newEnv(t, 100)
	small := strings.Repeat("s", 100)
	out, err := e.off.OffloadReader(e.ctx, hybridctx.Call{}, strings.NewReader(small))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, out.Outcome(), out.Reason(), hybridctx.Inline, hybridctx.BelowThreshold)
	if out.Text() != small || out.Consumed != 100 {
		t.Fatalf("inline stream: %q consumed %d", out.Text(), out.Consumed)
	}
	body := bytes.Repeat([]byte("0123456789abcdef\n"), 50_000) // 850 KB, several chunks
	sout, err := e.off.OffloadReader(e.ctx, hybridctx.Call{}, iotestOneByteFirst(body))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, sout.Outcome(), sout.Reason(), hybridctx.Offloaded, hybridctx.ThresholdExceeded)
	if sout.Ref != artifact.RefOf(body) || sout.Consumed != int64(len(body)) {
		t.Fatal("stream reference differs from the byte form")
	}
	bout := mustOffload(t, e.off, e.ctx, body)
	expect(t, bout.Outcome(), bout.Reason(), hybridctx.ExistingReference, hybridctx.ExistingContentMatch)
	if bout.Notice != sout.Notice {
		t.Fatalf("stream and byte notices differ:\n%s\n%s", sout.Notice, bout.Notice)
	}
	// A second stream of this owner's content is an existing reference with
	// no commit.
	before := e.inst.Counts().Commits
	again, err := e.off.OffloadReader(e.ctx, hybridctx.Call{}, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, again.Outcome(), again.Reason(), hybridctx.ExistingReference, hybridctx.ExistingContentMatch)
	if e.inst.Counts().Commits != before {
		t.Fatal("stream reuse committed a body")
	}
}

func TestStreamSourceError(t *testing.T) {
	e := newEnv(t, 4)
	r := io.MultiReader(strings.NewReader("0123456789"), errReader{})
	_, err := e.off.OffloadReader(e.ctx, hybridctx.Call{}, r)
	if !errors.Is(err, hybridctx.ErrSource) || !errors.Is(err, errBoom) {
		t.Fatalf("err = %v", err)
	}
	_, err = e.off.OffloadReader(e.ctx, hybridctx.Call{}, errReader{})
	if !errors.Is(err, hybridctx.ErrSource) {
		t.Fatalf("err = %v", err)
	}
	if len(e.events.all()) != 0 || e.inst.Counts().Commits != 0 {
		t.Fatal("a failing source reported or stored")
	}
}

// TestStreamTruncatedIsAnError: a source that fails with
// io.ErrUnexpectedEOF (a body cut short: an HTTP response, a gzip stream)
// fails the call like any other source error, wherever the cut falls: in
// the bytes that decide, in a stream decided from memory, in a long one.
// Nothing is inlined, stored or reported as if the stream had ended.
func TestStreamTruncatedIsAnError(t *testing.T) {
	for _, n := range []int{2, 10, 100 << 10, 600 << 10} {
		e := newEnv(t, 4)
		r := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("z"), n)), truncated{})
		out, err := e.off.OffloadReader(e.ctx, hybridctx.Call{}, r)
		if !errors.Is(err, hybridctx.ErrSource) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut after %d bytes: %+v, %v", n, out, err)
		}
		if len(e.events.all()) != 0 || e.inst.Counts().Commits != 0 {
			t.Fatalf("cut after %d bytes: reported or stored", n)
		}
	}
}

// truncated is a source cut short.
type truncated struct{}

func (truncated) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestStreamRewoundOnFailure(t *testing.T) {
	e := newEnv(t, 4)
	e.hooks.Write = func([]byte) error { return errors.New("ENOSPC") }
	src := bytes.NewReader([]byte("this will not fit"))
	out, err := e.off.OffloadReader(e.ctx, hybridctx.Call{}, src)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, out.Outcome(), out.Reason(), hybridctx.Failed, hybridctx.WorkspaceWriteFailed)
	rest, _ := io.ReadAll(src)
	if string(rest) != "this will not fit" {
		t.Fatalf("source not rewound: %q", rest)
	}
}

func TestOffloadAcceptsReader(t *testing.T) {
	e := newEnv(t, 4)
	out := mustOffload(t, e.off, e.ctx, bytes.NewBufferString("a reader given to Offload"))
	if out.Ref != artifact.RefOf([]byte("a reader given to Offload")) {
		t.Fatal("an io.Reader result was not streamed")
	}
}

var errBoom = errors.New("boom")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBoom }

// iotestOneByteFirst returns a reader that first yields one byte, then the
// rest in odd-sized pieces, to exercise chunk boundaries.
func iotestOneByteFirst(b []byte) io.Reader {
	return &pieces{b: b, sizes: []int{1, 7, 4093, 65537}}
}

type pieces struct {
	b     []byte
	sizes []int
	i     int
}

func (p *pieces) Read(out []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := min(p.sizes[p.i%len(p.sizes)], len(out), len(p.b))
	p.i++
	copy(out, p.b[:n])
	p.b = p.b[n:]
	return n, nil
}

func TestStreamHugeThresholdSmallInput(t *testing.T) {
	e := newEnv(t, 1)
	large, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 1 << 62, MaxArtifactBytes: 1 << 62}, nil)
	if err != nil {
		t.Fatal(err)
	}
	huge, err := hybridctx.NewOffloader(e.bind, hybridctx.Policy{InlineThreshold: 1<<63 - 1, MaxArtifactBytes: 1<<63 - 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []*hybridctx.Offloader{large, huge} {
		out, err := off.OffloadReader(e.ctx, hybridctx.Call{}, strings.NewReader("tiny"))
		if err != nil || out.Outcome() != hybridctx.Inline || out.Text() != "tiny" {
			t.Fatalf("huge threshold: %v %v", err, out)
		}
	}
	allocs := testing.AllocsPerRun(5, func() {
		_, _ = huge.OffloadReader(e.ctx, hybridctx.Call{}, strings.NewReader("tiny"))
	})
	if allocs > 20 {
		t.Fatalf("%v allocations for a tiny stream", allocs)
	}
}

// cancelOnRead cancels its context on the first Read, then delivers its
// bytes and EOF, as input that arrives just after Ctrl-C would.
type cancelOnRead struct {
	cancel context.CancelFunc
	r      io.Reader
}

func (c *cancelOnRead) Read(p []byte) (int, error) {
	c.cancel()
	return c.r.Read(p)
}

func TestStreamCancelledWhileReadingDecidesNothing(t *testing.T) {
	e := newEnv(t, 100)
	for _, n := range []int{5, 5000} {
		ctx, cancel := context.WithCancel(e.ctx)
		out, err := e.off.OffloadReader(ctx, hybridctx.Call{Tool: "t", ID: "c"}, &cancelOnRead{cancel: cancel, r: strings.NewReader(strings.Repeat("a", n))})
		if !errors.Is(err, context.Canceled) || out != nil {
			t.Fatalf("%d bytes: %v, %v; want no decision", n, out, err)
		}
	}
	if n := len(e.events.all()); n != 0 {
		t.Fatalf("%d events for cancelled reads", n)
	}
	if c := e.inst.Counts(); c.Commits != 0 {
		t.Fatalf("a cancelled read committed: %+v", c)
	}
}
