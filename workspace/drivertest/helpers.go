package drivertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace"
)

// Put ingests r and commits it: a stored body in one call, for tests that
// need one and do not test how it was written.
func Put(ctx context.Context, s *workspace.Store, r io.Reader, opts *workspace.IngestOptions) (artifact.Ref, int64, workspace.PutResult, error) {
	p, _, err := s.Ingest(ctx, r, opts)
	if err != nil {
		return artifact.Ref{}, 0, 0, err
	}
	res, err := p.Commit(ctx)
	return p.Ref(), p.Size(), res, err
}

// AttachData ingests data (streamed when stream is set, else as bytes) and
// attaches it for owner with a record created and used at the given time,
// as an offload does.
func AttachData(ctx context.Context, s *workspace.Store, owner artifact.Owner, data []byte, stream bool, at time.Time) (workspace.AttachCase, error) {
	return attach(ctx, s, data, stream, artifact.Record{Owner: owner, Tool: "t", CallID: "c", CreatedAt: at, LastUsedAt: at})
}

// Acknowledged reports whether c is a decision that leaves the owner a
// reference to the body (offloaded or existing_reference).
func Acknowledged(c workspace.AttachCase) bool {
	switch c {
	case workspace.AttachCreated, workspace.AttachExisting, workspace.AttachReplaced, workspace.AttachLostRace:
		return true
	}
	return false
}

// What Resolve finds, named as a rehydration reports it.
const (
	Resolved     = "resolved"
	Unauthorized = "unauthorized"
	Missing      = "missing"
	Stale        = "stale"
)

// Resolve is what a rehydration asks of the workspace: owner's record of
// ref, then the whole body, verified; reading is using, so the record is
// touched (at now) at most once per TouchEvery. It returns what a
// rehydration would report and the bytes when resolved; an error is a
// storage failure.
func Resolve(ctx context.Context, s *workspace.Store, owner artifact.Owner, ref artifact.Ref, now time.Time) (string, []byte, error) {
	rec, err := s.GetRecord(ctx, owner, ref)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Unauthorized, nil, nil
	case err != nil:
		return "", nil, err
	}
	if _, err := s.StatBody(ctx, ref); errors.Is(err, fs.ErrNotExist) {
		return Missing, nil, nil
	} else if err != nil {
		return "", nil, err
	}
	b, err := s.ReadVerified(ctx, ref, rec.Size, 0, rec.Size)
	switch {
	case errors.Is(err, workspace.ErrCorrupt):
		return Stale, nil, nil
	case errors.Is(err, fs.ErrNotExist):
		return Missing, nil, nil
	case err != nil:
		return "", nil, err
	}
	if now.Sub(rec.LastUsedAt) >= workspace.TouchEvery {
		_ = s.TouchRecord(ctx, owner, ref, now)
	}
	return Resolved, b, nil
}

// attach ingests data (as bytes, or streamed) and attaches it for rec.Owner.
func attach(ctx context.Context, s *workspace.Store, data []byte, stream bool, rec artifact.Record) (workspace.AttachCase, error) {
	var p *workspace.Pending
	var err error
	if stream {
		p, _, err = s.Ingest(ctx, bytes.NewReader(data), nil)
	} else {
		p, err = s.IngestBytes(ctx, data, nil)
	}
	if err != nil {
		return 0, err
	}
	return s.Attach(ctx, p, rec)
}
