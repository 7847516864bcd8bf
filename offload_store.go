package hybridctx

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"sync"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/classify"
	"github.com/hybridctx/hybridctx/workspace"
)

// digestForNotice hashes and classifies byte input whose stored notice the
// offload renders: the notice's token count first (the room its outline
// has depends on it), then the digest, kind and lines, then the outline of
// a JSON body from the same classification pass.
func (st *storing) digestForNotice(ctx context.Context) error {
	st.tokens = st.o.policy.noticeTokens(st.bytes, int64(len(st.bytes)))
	var ob observed
	if err := st.digestBytes(ctx, &ob); err != nil {
		return err
	}
	st.outline(&ob)
	return nil
}

// digestBytes classifies byte input into ob, then hashes it, keeping the
// digest for the write, and the body's kind and lines. The two run one
// after the other: classified beside its hash, on a goroutine of its own,
// no body from 4 KiB to 64 MiB was decided 10% faster in repeated runs,
// and bodies of 4 to 128 KiB were decided up to 28% slower (BENCHMARKS.md,
// "Speed code and its figures").
func (st *storing) digestBytes(ctx context.Context, ob *observed) error {
	_, _ = ob.Write(st.bytes)
	p, err := st.o.binding.store.IngestBytes(ctx, st.bytes, nil)
	return st.digested(p, ob, err)
}

// observed is the classification pass over a body: its kind and lines, and
// the outline of a JSON body, from the same JSON scan.
type observed struct {
	c     classify.Classifier
	shape classify.Shape
}

func (o *observed) Write(p []byte) (int, error) { return o.c.WriteOutline(p, &o.shape) }

// digested keeps the digest and the kind and lines the classification
// pass found.
func (st *storing) digested(p *workspace.Pending, ob *observed, err error) error {
	if err != nil {
		return err
	}
	st.pending, st.ref = p, p.Ref()
	st.classified(ob)
	return nil
}

// classified keeps the kind and lines the classification pass found.
func (st *storing) classified(ob *observed) {
	st.kind, st.lines = ob.c.Kind().String(), ob.c.Lines()
}

// outline renders the outline of a JSON body for its notice, from the
// classification pass, once the digest, kind, lines and token count are
// known: the room it has depends on what the notice's first lines say.
func (st *storing) outline(ob *observed) {
	if ob.c.Kind() == classify.JSON {
		st.shapeLen = len(ob.shape.Append(st.shapeBuf[:0], shapeRoom(st.facts(), st.o.policy)))
	}
}

// facts is what the notice says of the body.
func (st *storing) facts() *stored {
	return &stored{ref: st.ref, size: st.size, lines: st.lines, kind: st.kind, shape: st.shapeBuf[:st.shapeLen], tokens: st.tokens}
}

// storing carries one oversized result through step 5 of docs/offload.md.
type storing struct {
	o        *Offloader
	call     Call
	ref      artifact.Ref
	size     int64
	kind     string
	lines    int64
	tokens   int64 // the notice's token count (Policy.noticeTokens)
	shapeLen int   // the outline of a JSON body: shapeBuf[:shapeLen]
	shapeBuf [classify.MaxShapeLen]byte

	bytes   []byte             // byte input; nil for a stream
	orig    any                // byte input's original value
	pending *workspace.Pending // the body: hashed, written only if needed
	rewind  rewinder           // stream input: restores the source, if it can
	read    int64              // stream input: bytes consumed
	head    *previewTap        // stream input: the body's first bytes, for the preview
}

func (st *storing) discard() {
	if st.pending != nil {
		st.pending.Discard()
	}
}

func (st *storing) result(ctx context.Context, oc Outcome, r Reason) (*OffloadResult, error) {
	o := st.o
	switch oc {
	case Offloaded, ExistingReference:
		st.discard()
		out := &OffloadResult{Ref: st.ref, Notice: st.notice(), Consumed: st.read}
		return o.finish(ctx, out, oc, r, st.size)
	}
	st.discard()
	st.rewind.rewind()
	out := kept(st.orig, st.bytes)
	out.Consumed = st.read
	return o.finish(ctx, out, oc, r, st.size)
}

// notice renders the stored notice, with its preview (see storedNotice):
// the one rendering of a stored result's notice, also used to tell a
// notice in a history from a text that only reads like one.
func (st *storing) notice() string {
	return st.o.policy.withPreview(storedNotice(st.facts(), st.o.policy), st.previewHead(), st.kind)
}

// abort gives up without a decision: nothing of this call became visible.
func (st *storing) abort(err error) (*OffloadResult, error) {
	st.discard()
	st.rewind.rewind()
	return nil, err
}

// attachDecisions maps what the workspace did in step 5 of docs/offload.md to the
// decision's outcome and reason.
var attachDecisions = [...]struct {
	outcome Outcome
	reason  Reason
}{
	workspace.AttachCreated:            {Offloaded, ThresholdExceeded},
	workspace.AttachExisting:           {ExistingReference, ExistingContentMatch},
	workspace.AttachReplaced:           {Offloaded, ReplacedCorruptBody},
	workspace.AttachLostRace:           {ExistingReference, ExistingContentMatch},
	workspace.AttachReadFailed:         {Failed, WorkspaceReadFailed},
	workspace.AttachWriteFailed:        {Failed, WorkspaceWriteFailed},
	workspace.AttachRecordFailed:       {RecoveryRequired, RecordCommitFailed},
	workspace.AttachCanceledAfterWrite: {RecoveryRequired, CanceledAfterWrite},
}

// decide runs step 5 of docs/offload.md for a result whose digest and size are known: the
// workspace attaches the body to the owner and the case it reports is the
// decision.
func (st *storing) decide(ctx context.Context) (*OffloadResult, error) {
	oc, r, err := st.attach(ctx)
	if oc == 0 {
		return st.abort(err)
	}
	return st.result(ctx, oc, r)
}

// attach attaches the hashed body to the owner and returns the decision
// the workspace's case maps to, or a zero outcome and the error when no
// decision was made.
func (st *storing) attach(ctx context.Context) (Outcome, Reason, error) {
	now := st.o.clock().UTC()
	c, err := st.o.binding.store.Attach(ctx, st.pending, artifact.Record{
		Owner: st.o.binding.owner, Kind: st.kind,
		Tool: st.call.Tool, CallID: st.call.ID,
		Description: st.o.describe(st.call.Tool, st.call.ID),
		CreatedAt:   now, LastUsedAt: now,
	})
	if int(c) >= len(attachDecisions) || attachDecisions[c].outcome == 0 {
		return 0, 0, err
	}
	d := attachDecisions[c]
	return d.outcome, d.reason, nil
}

// OffloadReader decides a streamed tool result in bounded memory: it reads
// at most InlineThreshold+1 bytes before deciding, then streams the rest
// through the hasher into the workspace. When the outcome is failed or
// recovery_required and r is an io.Seeker, r is rewound to where it was, so
// the caller can still use the content; otherwise Consumed says how much was
// read. Only io.EOF ends the result: any other error of r, io.ErrUnexpectedEOF
// included (a body cut short), is returned wrapped in ErrSource, and nothing
// of the call is decided, stored or reported.
func (o *Offloader) OffloadReader(ctx context.Context, call Call, r io.Reader) (*OffloadResult, error) {
	if err := start(ctx, call); err != nil {
		return nil, err
	}
	return o.forTool(call.Tool).offloadStream(ctx, call, r)
}

// offloadStream is OffloadReader once the call is checked and o decides
// under the tool's threshold.
func (o *Offloader) offloadStream(ctx context.Context, call Call, r io.Reader) (*OffloadResult, error) {
	rewind := rewinderOf(r)
	bp, head, n, err := o.readHead(r)
	if bp != nil {
		defer smallPool.Put(bp)
	}
	switch {
	case ctx.Err() != nil:
		// Cancelled while waiting for input: no decision, whatever arrived.
		return nil, ctx.Err()
	case err == io.EOF && o.policy.ThresholdTokens > 0 && o.policy.overTokens(head, "", false):
		// Within the byte threshold but over the token bound: stored like
		// a small stream (below).
		st := &storing{o: o, call: call, rewind: rewind, read: n, size: n}
		if o.binding == nil || o.binding.store == nil {
			return st.result(ctx, Failed, NoAuthorizedWorkspace)
		}
		return st.decideBuffered(ctx, head)
	case err == io.EOF:
		out := &OffloadResult{Consumed: n}
		if n > 0 {
			out.content = head
			if bp != nil {
				out.content = bytes.Clone(head) // the pooled buffer goes back
			}
		}
		return o.finish(ctx, out, Inline, BelowThreshold, n)
	case err != nil:
		return nil, sourceError(err)
	}
	st := &storing{o: o, call: call, rewind: rewind, read: n, size: n}
	if o.binding == nil || o.binding.store == nil {
		return st.result(ctx, Failed, NoAuthorizedWorkspace)
	}
	limit := o.policy.maxBytes()
	if st.read > limit {
		return st.result(ctx, Failed, ExceedsMaxArtifactSize)
	}
	// A result that ends within smallStream bytes is decided from memory,
	// like byte input: no pipeline, and a reuse compares the stored body
	// with it instead of hashing it again.
	var rest io.Reader
	if lim := min(limit, smallStream); st.read <= lim {
		if bp == nil {
			bp = smallPool.Get().(*[]byte)
			defer smallPool.Put(bp)
		}
		buf := append((*bp)[:0], head...) // in place when the head is in it
		m, err := readFull(r, buf[len(buf):lim+1])
		st.read += int64(m)
		st.size = st.read
		buf = buf[:st.read]
		switch {
		case err == io.EOF:
			return st.decideBuffered(ctx, buf)
		case err != nil:
			return st.abort(sourceError(err))
		case st.read > limit:
			return st.result(ctx, Failed, ExceedsMaxArtifactSize)
		}
		rest = bytes.NewReader(buf)
	} else {
		rest = bytes.NewReader(head)
	}
	return st.ingest(ctx, io.MultiReader(rest, r), limit)
}

// decideBuffered decides a whole stream read into buf: like byte input,
// with the preview taken from buf. Stream input: Consumed, not the bytes,
// is what the host gets, and buf may go back to a pool once it returns.
func (st *storing) decideBuffered(ctx context.Context, buf []byte) (*OffloadResult, error) {
	st.bytes = buf
	err := st.digestForNotice(ctx)
	st.bytes = nil
	if p := st.o.policy.PreviewBytes; p > 0 {
		st.head = &previewTap{buf: bytes.Clone(buf[:min(int64(len(buf)), p)])}
	}
	if err != nil {
		return st.abort(err)
	}
	return st.decide(ctx)
}

// readHead reads the first threshold+1 bytes of r, which decide. Under a
// threshold smaller than smallStream they are read straight into a pooled
// buffer a small stream is decided from (bp, which the caller puts back);
// otherwise the head grows with what arrives, so a large threshold costs
// memory only for results that are actually that large.
func (o *Offloader) readHead(r io.Reader) (bp *[]byte, head []byte, n int64, err error) {
	if o.policy.InlineThreshold < smallStream {
		bp = smallPool.Get().(*[]byte)
		m, err := readFull(r, (*bp)[:o.policy.InlineThreshold+1])
		return bp, (*bp)[:m], int64(m), err
	}
	var buf bytes.Buffer
	n, err = io.CopyN(&buf, r, min(o.policy.InlineThreshold, math.MaxInt64-1)+1)
	return nil, buf.Bytes(), n, err
}

// ingest streams the rest of a large result, r (its head first), through
// the hasher into the workspace, and decides.
func (st *storing) ingest(ctx context.Context, r io.Reader, limit int64) (*OffloadResult, error) {
	o := st.o
	ob := new(observed)
	src := &countingReader{r: r}
	st.head = &previewTap{next: ob, max: int(o.policy.PreviewBytes)}
	st.head.max = max(st.head.max, o.policy.noticeHead())
	p, total, err := o.binding.store.Ingest(ctx, src, &workspace.IngestOptions{MaxBytes: limit, Observer: st.head})
	// Bytes were consumed from r before the workspace saw any, so a write
	// that failed early has still read at least st.read bytes.
	st.read = max(st.read, src.n)
	st.size = max(total, st.read)
	var we *workspace.Error
	switch {
	case err == nil:
	case errors.Is(err, workspace.ErrTooLarge):
		return st.result(ctx, Failed, ExceedsMaxArtifactSize)
	case ctx.Err() != nil:
		return st.abort(ctx.Err())
	case !errors.As(err, &we):
		return st.abort(sourceError(err))
	default:
		return st.result(ctx, Failed, WorkspaceWriteFailed)
	}
	st.tokens = o.policy.noticeTokens(st.head.buf, st.size) // before the outline's room
	if err := st.digested(p, ob, nil); err != nil {
		return st.abort(err)
	}
	st.outline(ob)
	return st.decide(ctx)
}

// readFull reads into buf until it is full or r ends, and returns io.EOF
// when r ended first. Unlike io.ReadFull it never turns an error into the
// end of input: an io.ErrUnexpectedEOF of r's own (a body cut short) stays
// r's error, so a truncated result is never decided as a complete one.
func readFull(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// smallStream is the longest streamed result decided from memory (see
// OffloadReader); a stream's memory stays bounded by the larger of it and
// the threshold, plus the pipeline's (workspace.Ingest; a stored body
// verified against a longer stream adds one 64 KiB piece).
const smallStream = 256 << 10

// smallPool holds the buffers small streams are read into: each holds
// smallStream+1 bytes and is back in the pool once its decision is made
// (the workspace copies what it keeps). Read instead into a bytes.Buffer
// that grows with the stream, a decision of 4 KiB to 256 KiB took 2.5 to
// 4 times the CPU; decided through the pipeline (workspace.Ingest) like a
// large stream, a new body of up to 32 KiB took 1.3 to 1.8 times and an
// existing one 2.1 to 3.3 times (BENCHMARKS.md, "Speed code and its
// figures").
var smallPool = sync.Pool{New: func() any { b := make([]byte, smallStream+1); return &b }}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// rewinder seeks a source back to the offset it was at when the decision
// began; its zero value, for a source that cannot seek, does nothing. It
// is a value, not a closure, so a stream decision allocates nothing for
// it.
type rewinder struct {
	s  io.Seeker
	at int64
}

// rewinderOf returns r's rewinder: the zero rewinder when r cannot seek.
func rewinderOf(r io.Reader) rewinder {
	s, ok := r.(io.Seeker)
	if !ok {
		return rewinder{}
	}
	at, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return rewinder{}
	}
	return rewinder{s: s, at: at}
}

// rewind seeks the source back, if it can.
func (w rewinder) rewind() {
	if w.s != nil {
		_, _ = w.s.Seek(w.at, io.SeekStart)
	}
}
