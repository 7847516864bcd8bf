package memstore

import (
	"errors"
	"io"
)

// blocks holds a body as a list of byte blocks, so that a body written in
// pieces is copied once: never moved while it grows, never joined.
type blocks struct {
	b    [][]byte
	one  [1][]byte // b's first element, without an allocation of its own
	size int64
}

// add appends a block.
func (bs *blocks) add(b []byte) {
	if bs.b == nil {
		bs.b = bs.one[:0]
	}
	bs.b = append(bs.b, b)
}

// write appends p: into the room left in the last block, the rest as a new
// block appended to nothing, which the runtime fills without clearing its
// memory first. A body written in one piece is one block.
func (bs *blocks) write(p []byte) {
	bs.size += int64(len(p))
	if k := len(bs.b); k > 0 {
		last := bs.b[k-1]
		c := copy(last[len(last):cap(last)], p)
		bs.b[k-1] = last[:len(last)+c]
		p = p[c:]
	}
	if len(p) > 0 {
		bs.add(append([]byte(nil), p...))
	}
}

// readAt reads from off as io.ReaderAt does.
func (bs *blocks) readAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("memstore: negative offset")
	}
	n := 0
	for _, b := range bs.b {
		if n == len(p) {
			break
		}
		if off >= int64(len(b)) {
			off -= int64(len(b))
			continue
		}
		n += copy(p[n:], b[off:])
		off = 0
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// blockReader reads a body's blocks from the start (io.Reader) or at any
// offset (io.ReaderAt).
type blockReader struct {
	bs  *blocks
	i   int // block of the next Read
	off int // offset in it
}

func (r *blockReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.bs.b) {
		b := r.bs.b[r.i]
		c := copy(p[n:], b[r.off:])
		n, r.off = n+c, r.off+c
		if r.off == len(b) {
			r.i, r.off = r.i+1, 0
		}
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (r *blockReader) ReadAt(p []byte, off int64) (int, error) { return r.bs.readAt(p, off) }
