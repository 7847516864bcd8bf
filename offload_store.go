package hybridctx

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/internal/classify"
	"github.com/hybridctx/hybridctx/workspace"
)

// touchEvery bounds how often a reuse refreshes a record's last-used time.
const touchEvery = time.Hour

// digestBytes hashes and classifies byte input in one pass over it (the
// two overlapped on a large body), keeping the digest for the write.
func digestBytes(b []byte) (workspace.Digested, string, int64) {
	var c classify.Classifier
	d := workspace.DigestBytes(b, &c)
	return d, c.Kind().String(), c.Lines()
}

// storing carries one oversized result through §4 step 5.
type storing struct {
	o     *Offloader
	call  Call
	ref   artifact.Ref
	size  int64
	kind  string
	lines int64

	bytes   []byte             // byte input; nil for a stream
	digest  workspace.Digested // byte input, hashed once
	orig    any                // byte input's original value
	pending *workspace.Pending // stream input: already written, not committed
	rewind  func()             // stream input: restore the source, if possible
	read    int64              // stream input: bytes consumed
	head    *previewTap        // stream input: the body's first bytes, for the preview
}

// ingest returns the pending body, writing it now for byte input.
func (st *storing) ingest(ctx context.Context) (*workspace.Pending, error) {
	if st.pending != nil {
		return st.pending, nil
	}
	p, err := st.o.binding.store.IngestDigested(ctx, st.digest)
	if err != nil {
		return nil, err
	}
	st.pending = p
	return p, nil
}

func (st *storing) discard() {
	if st.pending != nil {
		st.pending.Discard()
	}
}

// commit writes the body if needed and reports whether this call's bytes
// landed (created or replaced).
func (st *storing) commit(ctx context.Context) (landed bool, err error) {
	p, err := st.ingest(ctx)
	if err != nil {
		return false, err
	}
	res, err := p.Commit(ctx)
	if err != nil {
		return false, err
	}
	return res == workspace.Created || res == workspace.Replaced, nil
}

func (st *storing) result(ctx context.Context, oc Outcome, r Reason) (*Offload, error) {
	o := st.o
	switch oc {
	case Offloaded, ExistingReference:
		st.discard()
		notice := storedNotice(st.ref, st.size, st.lines, st.kind, o.policy.toolName())
		out := &Offload{Ref: st.ref, Notice: o.policy.withPreview(notice, st.previewHead(), st.kind), Consumed: st.read}
		return o.finish(ctx, out, oc, r, st.size)
	}
	st.discard()
	if st.rewind != nil {
		st.rewind()
	}
	return o.finish(ctx, &Offload{Original: st.orig, content: st.bytes, Consumed: st.read}, oc, r, st.size)
}

// abort gives up without a decision: nothing of this call became visible.
func (st *storing) abort(err error) (*Offload, error) {
	st.discard()
	if st.rewind != nil {
		st.rewind()
	}
	return nil, err
}

func isCorruptOrGone(err error) bool {
	return errors.Is(err, workspace.ErrCorrupt) || errors.Is(err, fs.ErrNotExist)
}

// decide runs §4 step 5 for a result whose digest and size are known.
func (st *storing) decide(ctx context.Context) (*Offload, error) {
	store, owner := st.o.binding.store, st.o.binding.owner
	rec, err := store.Record(ctx, owner, st.ref)
	if err == nil {
		out, handled, derr := st.decideOwn(ctx, rec)
		if handled {
			return out, derr
		}
		// The record was collected meanwhile: decide as for a new owner.
		err = fs.ErrNotExist
	}
	switch {
	case ctx.Err() != nil:
		return st.abort(ctx.Err())
	case !errors.Is(err, fs.ErrNotExist):
		return st.result(ctx, Failed, WorkspaceReadFailed)
	}
	// Reusing a stored body: hold its lock from finding it present to
	// committing the record, so that garbage collection cannot delete it in
	// between. A body written below, by this call or a concurrent one, was
	// committed just now and is protected by the grace period instead.
	unlock, err := store.LockBody(ctx, st.ref)
	if err != nil {
		if ctx.Err() != nil {
			return st.abort(ctx.Err())
		}
		return st.result(ctx, Failed, WorkspaceWriteFailed)
	}
	verr := store.VerifyBody(ctx, st.ref, st.size)
	if verr == nil && ctx.Err() == nil {
		created, err := st.createRecord(ctx)
		unlock()
		return st.recorded(ctx, false, created, err)
	}
	unlock()
	landed := false
	switch {
	case ctx.Err() != nil:
		return st.abort(ctx.Err())
	case isCorruptOrGone(verr):
		landed, err = st.commit(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return st.abort(ctx.Err())
			}
			return st.result(ctx, Failed, WorkspaceWriteFailed)
		}
	default:
		return st.result(ctx, Failed, WorkspaceWriteFailed)
	}
	if ctx.Err() != nil {
		if landed {
			return st.result(ctx, RecoveryRequired, CanceledAfterWrite)
		}
		return st.abort(ctx.Err())
	}
	created, err := st.createRecord(ctx)
	return st.recorded(ctx, landed, created, err)
}

// createRecord creates this owner's record of the body.
func (st *storing) createRecord(ctx context.Context) (bool, error) {
	now := st.o.clock().UTC()
	return st.o.binding.store.CreateRecord(ctx, artifact.Record{
		Owner: st.o.binding.owner, Ref: st.ref, Size: st.size, Kind: st.kind,
		Tool: st.call.Tool, CallID: st.call.ID,
		Description: st.o.describe(st.call.Tool, st.call.ID),
		CreatedAt:   now, LastUsedAt: now,
	})
}

// recorded decides from the record commit; landed says whether this call's
// bytes became the body.
func (st *storing) recorded(ctx context.Context, landed, created bool, err error) (*Offload, error) {
	switch {
	case err != nil && ctx.Err() != nil && landed:
		return st.result(ctx, RecoveryRequired, CanceledAfterWrite)
	case err != nil:
		return st.result(ctx, RecoveryRequired, RecordCommitFailed)
	case created:
		return st.result(ctx, Offloaded, ThresholdExceeded)
	}
	return st.result(ctx, ExistingReference, ExistingContentMatch)
}

// decideOwn handles a result this owner already has a record for. handled
// is false when the record turned out to have been collected meanwhile and
// nothing was written: the caller then decides as for a new owner.
func (st *storing) decideOwn(ctx context.Context, rec artifact.Record) (out *Offload, handled bool, err error) {
	store := st.o.binding.store
	verr := store.VerifyBody(ctx, st.ref, st.size)
	landed, wrote := false, false
	switch {
	case verr == nil:
	case ctx.Err() != nil:
		out, err = st.abort(ctx.Err())
		return out, true, err
	case !isCorruptOrGone(verr):
		out, err = st.result(ctx, Failed, WorkspaceReadFailed)
		return out, true, err
	default:
		landed, err = st.commit(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			out, err = st.abort(ctx.Err())
			return out, true, err
		case err != nil:
			out, err = st.result(ctx, Failed, WorkspaceWriteFailed)
			return out, true, err
		}
		wrote = true
	}
	// The body is in place. Refresh the record's last-used time (at most
	// hourly); a record found gone was collected since it was read.
	if now := st.o.clock(); now.Sub(rec.LastUsedAt) >= touchEvery {
		terr := store.TouchRecord(ctx, rec.Owner, st.ref, now)
		if errors.Is(terr, fs.ErrNotExist) && ctx.Err() == nil {
			if !wrote {
				return nil, false, nil
			}
			created, err := st.createRecord(ctx)
			out, err = st.recorded(ctx, landed, created, err)
			return out, true, err
		}
	}
	if landed {
		out, err = st.result(ctx, Offloaded, ReplacedCorruptBody)
	} else {
		out, err = st.result(ctx, ExistingReference, ExistingContentMatch)
	}
	return out, true, err
}

// OffloadReader decides a streamed tool result in bounded memory: it reads
// at most InlineThreshold+1 bytes before deciding, then streams the rest
// through the hasher into the workspace. When the outcome is failed or
// recovery_required and r is an io.Seeker, r is rewound to where it was, so
// the caller can still use the content; otherwise Consumed says how much was
// read.
func (o *Offloader) OffloadReader(ctx context.Context, call Call, r io.Reader) (*Offload, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o = o.forTool(call.Tool)
	rewind := rewinder(r)
	// The head grows with what arrives, so a large threshold costs memory
	// only for results that are actually that large.
	var head bytes.Buffer
	n, err := io.CopyN(&head, r, min(o.policy.InlineThreshold, math.MaxInt64-1)+1)
	switch {
	case err == io.EOF:
		out := &Offload{content: head.Bytes(), Consumed: n}
		return o.finish(ctx, out, Inline, BelowThreshold, n)
	case err != nil:
		return nil, sourceError(err)
	}
	st := &storing{o: o, call: call, rewind: rewind, read: n, size: n}
	if o.binding == nil || o.binding.store == nil {
		return st.result(ctx, Failed, NoAuthorizedWorkspace)
	}
	max := o.policy.maxBytes()
	if st.read > max {
		return st.result(ctx, Failed, ExceedsMaxArtifactSize)
	}
	var c classify.Classifier
	src := &countingReader{r: io.MultiReader(&head, r)}
	st.head = &previewTap{next: &c, max: int(o.policy.PreviewBytes)}
	p, total, err := o.binding.store.Ingest(ctx, src, &workspace.IngestOptions{MaxBytes: max, Observer: st.head})
	st.read = src.n
	st.size = total
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
	st.pending, st.ref, st.kind, st.lines = p, p.Ref(), c.Kind().String(), c.Lines()
	return st.decide(ctx)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// rewinder returns a function that seeks r back to its current offset, or
// nil when r cannot seek.
func rewinder(r io.Reader) func() {
	s, ok := r.(io.Seeker)
	if !ok {
		return nil
	}
	at, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil
	}
	return func() { _, _ = s.Seek(at, io.SeekStart) }
}
