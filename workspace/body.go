package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"io/fs"
	"sync"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// copyBufSize is the chunk size for streaming bodies through the hasher.
const copyBufSize = 256 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

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
	// example a classifier). It must not fail.
	Observer io.Writer
}

// Pending is a body that has been written and hashed but is not yet visible.
// End it with Commit or Discard.
type Pending struct {
	s    *Store
	w    driver.Writer
	ref  artifact.Ref
	size int64
	done bool
}

// Ref is the reference of the written bytes.
func (p *Pending) Ref() artifact.Ref { return p.ref }

// Size is the number of bytes written.
func (p *Pending) Size() int64 { return p.size }

// Discard drops the written bytes. It is safe to call after Commit.
func (p *Pending) Discard() {
	if !p.done {
		p.done = true
		_ = p.w.Abort()
	}
}

// Ingest streams r into a new pending body while hashing it, in bounded
// memory. Nothing is visible until Commit. On error nothing is left behind;
// n is the number of bytes read from r either way. A read error from r is
// returned as is (not wrapped), so callers can tell it from a storage error.
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
// ctx between chunks. It separates read errors from write errors.
func copyHashed(ctx context.Context, r io.Reader, h hash.Hash, w io.Writer, o IngestOptions) (n int64, rerr, werr error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		if err := ctx.Err(); err != nil {
			return n, nil, err
		}
		m, err := r.Read(buf)
		if m > 0 {
			n += int64(m)
			if o.MaxBytes > 0 && n > o.MaxBytes {
				return n, nil, ErrTooLarge
			}
			h.Write(buf[:m])
			if o.Observer != nil {
				_, _ = o.Observer.Write(buf[:m])
			}
			if _, e := w.Write(buf[:m]); e != nil {
				return n, nil, e
			}
		}
		if err == io.EOF {
			return n, nil, nil
		}
		if err != nil {
			return n, err, nil
		}
	}
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
	key := p.ref.Hex()
	err := p.w.Commit(ctx, key, false)
	if err == nil {
		p.done = true
		return Created, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return 0, wrap("put", p.ref, err)
	}
	verr := p.s.VerifyBody(ctx, p.ref, p.size)
	if verr == nil {
		return Existing, nil
	}
	if !errors.Is(verr, ErrCorrupt) && !isNotExist(verr) {
		return 0, verr
	}
	if l, ok := p.s.bodies.(driver.Locker); ok {
		unlock, err := l.Lock(ctx, key)
		if err != nil {
			return 0, wrap("put", p.ref, err)
		}
		defer func() { _ = unlock() }()
		// Someone may have repaired it while we waited.
		verr = p.s.VerifyBody(ctx, p.ref, p.size)
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
			if verr := p.s.VerifyBody(ctx, p.ref, p.size); verr != nil {
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

// Put ingests r and commits it: the convenience form of Ingest + Commit.
func (s *Store) Put(ctx context.Context, r io.Reader, opts *IngestOptions) (artifact.Ref, int64, PutResult, error) {
	p, _, err := s.Ingest(ctx, r, opts)
	if err != nil {
		return artifact.Ref{}, 0, 0, err
	}
	res, err := p.Commit(ctx)
	return p.ref, p.size, res, err
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
	return wrap("verify", ref, hashCheck(ctx, r, ref, want, nil))
}

// hashCheck reads at most want+1 bytes of r, hashing them, and checks the
// length and digest. When sink is non-nil it receives each chunk and its
// offset as read (before verification: callers must not release it on error).
func hashCheck(ctx context.Context, r io.Reader, ref artifact.Ref, want int64, sink func(off int64, b []byte)) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	h := sha256.New()
	lr := io.LimitReader(r, want+1)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := lr.Read(buf)
		if m > 0 {
			h.Write(buf[:m])
			if sink != nil {
				sink(n, buf[:m])
			}
			n += int64(m)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	var sum [sha256.Size]byte
	wantSum := ref.Sum()
	if n != want || !bytes.Equal(h.Sum(sum[:0]), wantSum[:]) {
		return ErrCorrupt
	}
	return nil
}
