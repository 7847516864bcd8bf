package workspace

import (
	"context"
	"errors"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
)

// TouchEvery bounds how often reusing a record refreshes its last-used
// time: at most once per TouchEvery, so that a hot body costs no record
// write per use. Garbage collection's shortest record max age (MinMaxAge)
// is no shorter, so a record in use never expires.
const TouchEvery = time.Hour

// AttachCase says what Attach did: one of four decisions when it returns a
// nil error, one of four failures otherwise. The zero value means no
// decision: the context ended before anything of the call became visible.
type AttachCase uint8

const (
	// AttachCreated: this call created the owner's record; the body was
	// already stored (by anyone) or was written by this call.
	AttachCreated AttachCase = iota + 1
	// AttachExisting: the owner already had a record and its body
	// verified, or another call of the same owner rewrote it first.
	// Nothing was written; at most the record's last-used time moved.
	AttachExisting
	// AttachReplaced: the owner already had a record, its body was corrupt
	// or absent, and this call's verified bytes replaced it.
	AttachReplaced
	// AttachLostRace: another call committed the owner's record first.
	// This call's bytes may still be the ones that landed.
	AttachLostRace
	// AttachReadFailed: the owner's record, or the body it points at,
	// could not be read. Nothing was written.
	AttachReadFailed
	// AttachWriteFailed: the body could not be checked, locked or written
	// for a new record. Nothing became visible.
	AttachWriteFailed
	// AttachRecordFailed: the body is in place but the record could not be
	// committed; attaching the same body again writes no second body.
	AttachRecordFailed
	// AttachCanceledAfterWrite: this call's bytes landed, then the context
	// ended before the record was committed.
	AttachCanceledAfterWrite
)

var attachNames = [...]string{
	"none", "created", "existing", "replaced", "lost_race",
	"read_failed", "write_failed", "record_failed", "canceled_after_write",
}

func (c AttachCase) String() string {
	if int(c) < len(attachNames) {
		return attachNames[c]
	}
	return "unknown"
}

// Attach stores p, if the workspace lacks it, and binds it to rec.Owner:
// the one operation by which a body and its owner's record become visible
// together. rec's Ref and Size are taken from p; its other fields are kept
// (its LastUsedAt is also the time a reused record is touched with). Attach
// ends p.
//
// When the owner already has a record, the body is only verified (and
// rewritten from p's bytes if corrupt or absent). Otherwise the body, if
// stored, is verified and the record created under the body's lock (see
// lockBody), so that garbage collection cannot delete it in between; a body
// written by this call is protected by the grace period instead. Exactly one
// of any number of concurrent calls for the same owner and body reports
// AttachCreated (or, for a repair, AttachReplaced).
//
// A nil error comes with AttachCreated, AttachExisting, AttachReplaced or
// AttachLostRace; otherwise the case says which step failed, and is zero
// when the context ended before anything was committed (the error is then
// the context's).
func (s *Store) Attach(ctx context.Context, p *Pending, rec artifact.Record) (AttachCase, error) {
	defer p.Discard()
	if p.done {
		return AttachWriteFailed, wrap("attach", p.ref, errors.New("pending body already ended"))
	}
	rec.Ref, rec.Size = p.ref, p.size
	// The owner and reference are checked here, and the record is looked up
	// from the driver directly, so that the common "no record yet" case
	// costs no wrapped error; the steps below check again where they go
	// through the Store.
	if err := s.checkOwner(ctx, rec.Owner, rec.Ref); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, cerr
		}
		return AttachReadFailed, wrap("record", rec.Ref, err)
	}
	cur, err := s.records.GetRecord(ctx, rec.Owner, rec.Ref)
	switch {
	case err == nil:
		return s.attachOwn(ctx, p, cur, rec)
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case !isNotExist(err):
		return AttachReadFailed, wrap("record", rec.Ref, err)
	}
	return s.attachNew(ctx, p, rec)
}

// attachOwn attaches p for an owner that already has the record cur.
func (s *Store) attachOwn(ctx context.Context, p *Pending, cur, rec artifact.Record) (AttachCase, error) {
	verr := p.verifyStored(ctx)
	landed, wrote := false, false
	switch {
	case verr == nil:
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case !isCorruptOrGone(verr):
		return AttachReadFailed, verr
	default:
		res, err := p.Commit(ctx)
		if err != nil {
			return failedUnlessCanceled(ctx, AttachWriteFailed, err)
		}
		landed, wrote = res == Created || res == Replaced, true
	}
	// The body is in place. Refresh the record's last-used time (at most
	// once per TouchEvery); a record found gone was collected since it was
	// read.
	if rec.LastUsedAt.Sub(cur.LastUsedAt) >= TouchEvery {
		terr := s.TouchRecord(ctx, rec.Owner, rec.Ref, rec.LastUsedAt)
		if isNotExist(terr) && ctx.Err() == nil {
			if !wrote {
				return s.attachNew(ctx, p, rec)
			}
			return s.commitRecord(ctx, rec, landed)
		}
	}
	if landed {
		return AttachReplaced, nil
	}
	return AttachExisting, nil
}

// attachNew attaches p for an owner without a record of it.
func (s *Store) attachNew(ctx context.Context, p *Pending, rec artifact.Record) (AttachCase, error) {
	// Most new records come with a new body: look for it without the lock
	// first. A stored body is reused under its lock, held from verifying
	// it to committing the record, so that garbage collection cannot
	// delete it in between. A body absent here and written below, by this
	// call or a concurrent one, was committed just now and is protected by
	// the grace period instead, as it would be had the lock been taken.
	verr := p.statStored(ctx)
	if verr == nil {
		unlock, err := s.lockKey(ctx, p.ref, p.key())
		if err != nil {
			return failedUnlessCanceled(ctx, AttachWriteFailed, err)
		}
		verr = p.verifyStored(ctx)
		if verr == nil && ctx.Err() == nil {
			defer unlock()
			return s.commitRecord(ctx, rec, false)
		}
		unlock()
	}
	switch {
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case !isCorruptOrGone(verr):
		return AttachWriteFailed, wrap("verify", p.ref, verr)
	}
	res, err := p.Commit(ctx)
	if err != nil {
		return failedUnlessCanceled(ctx, AttachWriteFailed, err)
	}
	landed := res == Created || res == Replaced
	if ctx.Err() != nil {
		if landed {
			return AttachCanceledAfterWrite, ctx.Err()
		}
		return 0, ctx.Err()
	}
	return s.commitRecord(ctx, rec, landed)
}

// commitRecord creates the owner's record once the body is in place;
// landed says whether this call's bytes became the body.
func (s *Store) commitRecord(ctx context.Context, rec artifact.Record, landed bool) (AttachCase, error) {
	created, err := s.createRecord(ctx, rec)
	switch {
	case err != nil && ctx.Err() != nil && landed:
		return AttachCanceledAfterWrite, err
	case err != nil:
		return AttachRecordFailed, err
	case created:
		return AttachCreated, nil
	}
	return AttachLostRace, nil
}

// failedUnlessCanceled reports a failure at step c, or no decision when the
// context ended (nothing was committed).
func failedUnlessCanceled(ctx context.Context, c AttachCase, err error) (AttachCase, error) {
	if cerr := ctx.Err(); cerr != nil {
		return 0, cerr
	}
	return c, err
}

func isCorruptOrGone(err error) bool { return errors.Is(err, ErrCorrupt) || isNotExist(err) }

// lockBody takes the per-body lock of ref (driver.Locker), which holds
// across every process sharing the workspace, and returns the function that
// releases it. Attach holds it from finding a stored body present until the
// record is committed, and CollectGarbage while it re-checks and deletes a
// body, so that collection never deletes a body a record points to. On a
// backend without a Locker it returns a no-op (and CollectGarbage refuses
// to run there).
func (s *Store) lockBody(ctx context.Context, ref artifact.Ref) (unlock func(), err error) {
	return s.lockKey(ctx, ref, ref.Hex())
}

// lockKey is lockBody for a caller that holds ref's key already.
func (s *Store) lockKey(ctx context.Context, ref artifact.Ref, key string) (unlock func(), err error) {
	if err := s.check(ctx, ref); err != nil {
		return nil, wrap("lock", ref, err)
	}
	if s.locker == nil {
		return func() {}, nil
	}
	u, err := s.locker.Lock(ctx, key)
	if err != nil {
		return nil, wrap("lock", ref, err)
	}
	return func() { _ = u() }, nil
}
