package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hybridctx/hybridctx/artifact"
	"github.com/hybridctx/hybridctx/workspace/driver"
)

// ErrRange means a requested range does not lie within the body.
var ErrRange = errors.New("range outside the body")

// ReadVerified returns bytes [off, off+n) of the body of ref, whose expected
// size is size. The whole body is hashed in one pass, with the range copied
// aside as it passes; nothing is returned unless the length and digest match.
// Memory is bounded by n. A body of another size, or one that does not hash
// to its digest, is ErrCorrupt; an absent one wraps fs.ErrNotExist.
func (s *Store) ReadVerified(ctx context.Context, ref artifact.Ref, size, off, n int64) ([]byte, error) {
	if err := s.check(ctx, ref); err != nil {
		return nil, wrap("read", ref, err)
	}
	if size < 0 || off < 0 || n < 0 || off > size || n > size-off {
		return nil, wrap("read", ref, ErrRange)
	}
	r, err := s.open(ctx, ref, size)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := make([]byte, n)
	end := off + n
	err = hashCheck(ctx, r, ref, size, func(at int64, b []byte) {
		lo, hi := max(at, off), min(at+int64(len(b)), end)
		if lo < hi {
			copy(out[lo-off:], b[lo-at:hi-at])
		}
	})
	if err != nil {
		clear(out)
		return nil, wrap("read", ref, err)
	}
	return out, nil
}

// CopyVerified writes bytes [off, off+n) of the body of ref to w, in bounded
// memory whatever the size. It verifies the whole body first and writes
// nothing before that succeeded; it then copies the range from the same open
// body when the backend allows it, and checks afterwards that the body did
// not change in between (ErrChanged). It returns the bytes written.
func (s *Store) CopyVerified(ctx context.Context, ref artifact.Ref, size, off, n int64, w io.Writer) (int64, error) {
	if err := s.check(ctx, ref); err != nil {
		return 0, wrap("read", ref, err)
	}
	if size < 0 || off < 0 || n < 0 || off > size || n > size-off {
		return 0, wrap("read", ref, ErrRange)
	}
	r, err := s.open(ctx, ref, size)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	before := r.Info()
	if err := hashCheck(ctx, r, ref, size, nil); err != nil {
		return 0, wrap("read", ref, err)
	}
	if ra, ok := r.(driver.RangeReader); ok {
		if rs, ok := r.(driver.Restatter); ok {
			if mid, err := rs.Restat(); err != nil || mid.Size != before.Size || mid.Version != before.Version {
				return 0, wrap("read", ref, cmpOr(err, ErrChanged))
			}
			written, err := copyCtx(ctx, w, io.NewSectionReader(ra, off, n))
			if err != nil {
				return written, wrap("read", ref, err)
			}
			after, err := rs.Restat()
			if err != nil {
				return written, wrap("read", ref, err)
			}
			if after.Size != before.Size || after.Version != before.Version {
				return written, wrap("read", ref, ErrChanged)
			}
			return written, nil
		}
	}
	return s.copyReopened(ctx, ref, size, off, n, before, w)
}

// copyReopened serves the range from a second open of the body. With a
// version it compares the second open's version with the verified one,
// copies the range without hashing again and checks the version once more
// after the copy; without one it re-hashes the body while copying.
func (s *Store) copyReopened(ctx context.Context, ref artifact.Ref, size, off, n int64, before driver.Info, w io.Writer) (int64, error) {
	r2, err := s.open(ctx, ref, size)
	if err != nil {
		return 0, err
	}
	defer r2.Close()
	if before.Version != "" {
		if r2.Info().Version != before.Version {
			return 0, wrap("read", ref, ErrChanged)
		}
		written, err := copyRange(ctx, w, r2, off, n)
		if err != nil {
			return written, wrap("read", ref, err)
		}
		after, err := s.bodies.Stat(ctx, ref.Hex())
		if err != nil || after.Version != before.Version || after.Size != size {
			return written, wrap("read", ref, cmpOr(err, ErrChanged))
		}
		return written, nil
	}
	var written int64
	var werr error
	end := off + n
	err = hashCheck(ctx, r2, ref, size, func(at int64, b []byte) {
		lo, hi := max(at, off), min(at+int64(len(b)), end)
		if lo < hi && werr == nil {
			var m int
			m, werr = w.Write(b[lo-at : hi-at])
			written += int64(m)
		}
	})
	if werr != nil {
		return written, wrap("read", ref, werr)
	}
	if errors.Is(err, ErrCorrupt) {
		err = ErrChanged
	}
	return written, wrap("read", ref, err)
}

// copyRange copies bytes [off, off+n) of r, which reads from the start of
// the body, to w: through ReadAt when r offers it, else by skipping off
// bytes. A body shorter than off+n is ErrChanged (its size was checked when
// it was opened).
func copyRange(ctx context.Context, w io.Writer, r driver.Reader, off, n int64) (int64, error) {
	var src io.Reader
	if ra, ok := r.(driver.RangeReader); ok {
		src = io.NewSectionReader(ra, off, n)
	} else {
		if _, err := copyCtx(ctx, io.Discard, io.LimitReader(r, off)); err != nil {
			return 0, err
		}
		src = io.LimitReader(r, n)
	}
	written, err := copyCtx(ctx, w, src)
	if err == nil && written != n {
		err = ErrChanged
	}
	return written, err
}

func (s *Store) open(ctx context.Context, ref artifact.Ref, size int64) (driver.Reader, error) {
	r, err := s.bodies.Open(ctx, ref.Hex())
	if err != nil {
		return nil, wrap("read", ref, err)
	}
	if got := r.Info().Size; got != size {
		r.Close()
		return nil, wrap("read", ref, fmt.Errorf("%w: stored %d bytes, expected %d", ErrCorrupt, got, size))
	}
	return r, nil
}

func cmpOr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

func copyCtx(ctx context.Context, w io.Writer, r io.Reader) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		m, err := r.Read(buf)
		if m > 0 {
			k, werr := w.Write(buf[:m])
			n += int64(k)
			if werr != nil {
				return n, werr
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
