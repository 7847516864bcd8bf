package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"io/fs"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// PutResult says what a commit did.
type PutResult uint8

const (
	// Created means this call's bytes became the body.
	Created PutResult = iota + 1
	// Existing means a verified body was already present; nothing was written.
	Existing
	// Replaced means a corrupt body was present and this call's verified
	// bytes replaced it.
	Replaced
)

func (r PutResult) String() string {
	switch r {
	case Created:
		return "created"
	case Existing:
		return "existing"
	case Replaced:
		return "replaced"
	}
	return "unknown"
}

// IngestOptions tune Ingest. The zero value means no size limit and no
// observer.
type IngestOptions struct {
	// MaxBytes, when > 0, fails the ingest with ErrTooLarge as soon as more
	// than MaxBytes bytes were read.
	MaxBytes int64
	// Observer, when non-nil, sees every byte as it is written (for
	// example a classifier). It must not fail. IngestBytes runs it on a
	// goroutine of its own, overlapped with the hash; a caller for whom
	// that hand-off costs more than it saves writes to it itself instead.
	Observer io.Writer
}

// Pending is a body that has been hashed but is not yet visible: already
// written (Ingest), or still in memory and written only when it has to be
// (IngestBytes). End it with Commit, Attach or Discard.
type Pending struct {
	s      *Store
	w      driver.Writer // nil while the bytes are only in memory
	b      []byte        // IngestBytes: the bytes, until written
	mem    []byte        // IngestBytes: the bytes, kept to verify a stored body against
	ref    artifact.Ref
	keyHex string // ref's key, once asked for (see key)
	size   int64
	done   bool
}

// key returns the driver key of p's body (its digest in hex), formatted
// once.
func (p *Pending) key() string {
	if p.keyHex == "" {
		p.keyHex = p.ref.Hex()
	}
	return p.keyHex
}

// statStored is a cheap first look at the stored body of p's digest,
// without reading it: present and of p's size. It returns the driver's
// error as is (fs.ErrNotExist for an absent body, not wrapped, so that the
// common miss allocates nothing here) or ErrCorrupt.
func (p *Pending) statStored(ctx context.Context) error {
	info, err := p.s.bodies.Stat(ctx, p.key())
	switch {
	case err != nil:
		return err
	case info.Size != p.size:
		return ErrCorrupt
	}
	return nil
}

// Ref is the reference of the body's bytes.
func (p *Pending) Ref() artifact.Ref { return p.ref }

// Size is the number of bytes of the body.
func (p *Pending) Size() int64 { return p.size }

// Discard drops the body. It is safe to call after Commit or Attach.
func (p *Pending) Discard() {
	if !p.done {
		p.done = true
		if p.w != nil {
			_ = p.w.Abort()
		}
		p.b, p.mem = nil, nil
	}
}

// Ingest streams r into a new pending body while hashing it, in bounded
// memory. Nothing is visible until Commit or Attach. On error nothing is
// left behind; n is the number of bytes read from r either way. A read error
// from r is returned as is (not wrapped), so callers can tell it from a
// storage error.
func (s *Store) Ingest(ctx context.Context, r io.Reader, opts *IngestOptions) (p *Pending, n int64, err error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if s.closed.Load() {
		return nil, 0, wrap("put", artifact.Ref{}, ErrClosed)
	}
	var o IngestOptions
	if opts != nil {
		o = *opts
	}
	h := sha256.New()
	w, err := s.bodies.NewWriter(ctx)
	if err != nil {
		return nil, 0, wrap("put", artifact.Ref{}, err)
	}
	n, rerr, werr := copyHashed(ctx, r, h, w, o)
	if rerr != nil || werr != nil {
		_ = w.Abort()
		if werr != nil {
			return nil, n, wrap("put", artifact.Ref{}, werr)
		}
		return nil, n, rerr
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return &Pending{s: s, w: w, ref: artifact.RefFromSum(sum), size: n}, n, nil
}

// copyHashed copies r to w and h (and the observer), honouring MaxBytes and
// ctx between chunks. It separates read errors from write errors. It reads
// at most MaxBytes+1 bytes.
func copyHashed(ctx context.Context, r io.Reader, h hash.Hash, w io.Writer, o IngestOptions) (n int64, rerr, werr error) {
	limit := int64(-1)
	if o.MaxBytes > 0 {
		limit = o.MaxBytes + 1
	}
	n, rerr, werr = pump(ctx, r, limit, ingestStages(h, w, o.Observer)...)
	if rerr == nil && werr == nil && o.MaxBytes > 0 && n > o.MaxBytes {
		werr = ErrTooLarge
	}
	return n, rerr, werr
}

// ingestStages are the stages of a body being stored: the hash, the
// observer (if any) and the driver's writer.
func ingestStages(h hash.Hash, w io.Writer, observer io.Writer) []stage {
	stages := []stage{hashStage(h)}
	if observer != nil {
		stages = append(stages, func(_ int64, b []byte) error {
			_, _ = observer.Write(b)
			return nil
		})
	}
	return append(stages, func(_ int64, b []byte) error {
		_, err := w.Write(b)
		return err
	})
}

// Commit makes the pending body visible under its digest. If a body is
// already present it is verified first (size, then hash): a verified body
// gives Existing and nothing is written; a corrupt or vanished one is
// replaced by the pending bytes, under the driver's lock when it offers one,
// and exactly one of several concurrent repairers reports Replaced.
func (p *Pending) Commit(ctx context.Context) (PutResult, error) {
	if p.done {
		return 0, wrap("put", p.ref, errors.New("pending body already ended"))
	}
	defer p.Discard()
	if err := ctx.Err(); err != nil {
		return 0, wrap("put", p.ref, err)
	}
	if err := p.write(ctx); err != nil {
		return 0, err
	}
	key := p.key()
	err := p.w.Commit(ctx, key, false)
	if err == nil {
		p.done = true
		return Created, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return 0, wrap("put", p.ref, err)
	}
	verr := p.verifyStored(ctx)
	if verr == nil {
		return Existing, nil
	}
	if !errors.Is(verr, ErrCorrupt) && !isNotExist(verr) {
		return 0, verr
	}
	if p.s.locker != nil {
		unlock, err := p.s.locker.Lock(ctx, key)
		if err != nil {
			return 0, wrap("put", p.ref, err)
		}
		defer func() { _ = unlock() }()
		// Someone may have repaired it while we waited.
		verr = p.verifyStored(ctx)
		if verr == nil {
			return Existing, nil
		}
		if !errors.Is(verr, ErrCorrupt) && !isNotExist(verr) {
			return 0, verr
		}
	}
	if isNotExist(verr) {
		err = p.w.Commit(ctx, key, false)
		if errors.Is(err, fs.ErrExist) {
			// Another writer recreated it first; trust it only once verified.
			if verr := p.verifyStored(ctx); verr != nil {
				return 0, verr
			}
			return Existing, nil
		}
		if err != nil {
			return 0, wrap("put", p.ref, err)
		}
		p.done = true
		return Created, nil
	}
	if err := p.w.Commit(ctx, key, true); err != nil {
		return 0, wrap("repair", p.ref, err)
	}
	p.done = true
	return Replaced, nil
}

// VerifyBody checks that the body of ref is present, has size bytes (when
// size ≥ 0) and hashes to its digest. It returns nil, an error wrapping
// fs.ErrNotExist, one wrapping ErrCorrupt, or a storage error.
func (s *Store) VerifyBody(ctx context.Context, ref artifact.Ref, size int64) error {
	if err := s.check(ctx, ref); err != nil {
		return wrap("verify", ref, err)
	}
	info, err := s.bodies.Stat(ctx, ref.Hex())
	if err != nil {
		return wrap("verify", ref, err)
	}
	if size >= 0 && info.Size != size {
		return wrap("verify", ref, ErrCorrupt)
	}
	r, err := s.bodies.Open(ctx, ref.Hex())
	if err != nil {
		return wrap("verify", ref, err)
	}
	defer r.Close()
	want := size
	if want < 0 {
		want = r.Info().Size
	}
	s.verifyHashed.Add(want)
	return wrap("verify", ref, hashCheck(ctx, r, ref, want, nil))
}

// verifyStored checks the stored body of p's digest as VerifyBody does. When
// p's bytes are in memory they already hash to the digest, so the stored
// body verifies exactly when it equals them: it is compared with them
// (one read, no hash). A streamed body's stored twin is hashed again.
func (p *Pending) verifyStored(ctx context.Context) error {
	if p.mem == nil {
		return p.s.VerifyBody(ctx, p.ref, p.size)
	}
	if err := p.s.check(ctx, p.ref); err != nil {
		return wrap("verify", p.ref, err)
	}
	return wrap("verify", p.ref, p.readCompare(ctx))
}

// readCompare opens the stored body of p's digest and compares it with
// p's bytes in memory.
func (p *Pending) readCompare(ctx context.Context) error {
	// The reader describes the body it was opened on: a size that differs
	// is caught here, before reading, without a stat of its own.
	r, err := p.s.bodies.Open(ctx, p.key())
	if err != nil {
		return err
	}
	defer r.Close()
	if r.Info().Size != p.size {
		return ErrCorrupt
	}
	return equalCheck(ctx, r, p.mem)
}

// equalCheck reads at most len(want)+1 bytes of r and checks that they are
// exactly want.
func equalCheck(ctx context.Context, r io.Reader, want []byte) error {
	if len(want) < chunkSize {
		// One chunk: read it whole and compare, as pump would, without
		// building its stages.
		if err := ctx.Err(); err != nil {
			return err
		}
		bp := bufPool.Get().(*[]byte)
		defer bufPool.Put(bp)
		m, _, err := fill(r, *bp, int64(len(want))+1)
		switch {
		case err != nil:
			return err
		case !bytes.Equal((*bp)[:m], want):
			return ErrCorrupt
		}
		return nil
	}
	n, rerr, cerr := pump(ctx, r, int64(len(want))+1, func(off int64, b []byte) error {
		if off+int64(len(b)) > int64(len(want)) || !bytes.Equal(b, want[off:off+int64(len(b))]) {
			return ErrCorrupt
		}
		return nil
	})
	if err := cmpOr(rerr, cerr); err != nil {
		return err
	}
	if n != int64(len(want)) {
		return ErrCorrupt
	}
	return nil
}

// hashCheck reads at most want+1 bytes of r, hashing them, and checks the
// length and digest. When sink is non-nil it receives each chunk and its
// offset as read (before verification: callers must not release it on error).
func hashCheck(ctx context.Context, r io.Reader, ref artifact.Ref, want int64, sink func(off int64, b []byte)) error {
	h := sha256.New()
	stages := []stage{hashStage(h)}
	if sink != nil {
		stages = append(stages, func(off int64, b []byte) error {
			sink(off, b)
			return nil
		})
	}
	n, rerr, cerr := pump(ctx, r, want+1, stages...)
	if err := cmpOr(rerr, cerr); err != nil {
		return err
	}
	var sum [sha256.Size]byte
	wantSum := ref.Sum()
	if n != want || !bytes.Equal(h.Sum(sum[:0]), wantSum[:]) {
		return ErrCorrupt
	}
	return nil
}
