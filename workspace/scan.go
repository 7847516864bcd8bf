package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"

	"github.com/hybridctx/hybridctx/artifact"
)

// ScanVerified reads the body of ref, whose expected size is size, once:
// every chunk goes, in order and with its offset, both to the SHA-256 hash
// and to scan, each on its own goroutine when the body is larger than one
// chunk, so a scan no slower than the hash costs no extra time. It returns
// nil only when the body had size bytes and hashed to its digest; a body of
// another size or content is ErrCorrupt, an absent one wraps fs.ErrNotExist.
//
// scan sees the bytes before they are verified: it may only look at them
// or copy them aside, and its caller must release nothing it derived from
// them unless ScanVerified returned nil. The chunk is valid only until scan
// returns. An error from scan stops the read and is returned (wrapped).
// Memory is bounded by the pump's buffers plus what scan keeps.
func (s *Store) ScanVerified(ctx context.Context, ref artifact.Ref, size int64, scan func(off int64, b []byte) error) error {
	if err := s.check(ctx, ref); err != nil {
		return wrap("read", ref, err)
	}
	if size < 0 {
		return wrap("read", ref, ErrRange)
	}
	r, err := s.open(ctx, ref, size)
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	stages := []stage{hashStage(h)}
	if scan != nil {
		stages = append(stages, stage(scan))
	}
	n, rerr, serr := pump(ctx, r, size+1, stages...)
	if err := cmpOr(rerr, serr); err != nil {
		return wrap("read", ref, err)
	}
	var sum [sha256.Size]byte
	want := ref.Sum()
	if n != size || !bytes.Equal(h.Sum(sum[:0]), want[:]) {
		return wrap("read", ref, ErrCorrupt)
	}
	return nil
}
