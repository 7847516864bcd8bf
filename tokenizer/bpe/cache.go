package bpe

import "sync/atomic"

// pieceCache remembers the counts of recent pieces of up to cacheKey bytes,
// in front of the vocabulary: a text repeats its pieces, and the cache
// (512 KiB) stays in the processor's cache where the vocabulary's index
// does not. It is direct-mapped by the piece's hash, never allocates and
// never grows. Each entry is a sequence lock over atomic words, so any
// number of goroutines may read and write it: a reader that sees a write
// in progress, or that raced one, treats the entry as a miss, and a writer
// that finds another writing skips its write.
type pieceCache struct {
	e [cacheSize]cacheEntry
}

const (
	cacheSize = 16384
	cacheKey  = 24
)

type cacheEntry struct {
	seq  atomic.Uint32 // odd while a write is in progress
	meta atomic.Uint32 // key length | count<<8; 0 is empty
	key  [cacheKey / 8]atomic.Uint64
}

// keyWords returns piece (at most cacheKey bytes), whose first word is
// w0, as zero-padded words.
func keyWords(piece string, w0 uint64) (w [cacheKey / 8]uint64) {
	w[0] = w0
	for i := 8; i < len(piece); i += 8 {
		w[i/8] = pack(piece[i:])
	}
	return w
}

// get returns the count of piece (hash h, first word w0), if cached.
func (c *pieceCache) get(piece string, h, w0 uint64) (int, bool) {
	if len(piece) > cacheKey {
		return 0, false
	}
	e := &c.e[h%cacheSize]
	s := e.seq.Load()
	if s&1 != 0 {
		return 0, false
	}
	m := e.meta.Load()
	if int(m&0xff) != len(piece) {
		return 0, false
	}
	w := keyWords(piece, w0)
	for i := 0; i*8 < len(piece); i++ {
		if e.key[i].Load() != w[i] {
			return 0, false
		}
	}
	if e.seq.Load() != s {
		return 0, false
	}
	return int(m >> 8), true
}

// put records the count of piece (hash h, first word w0).
func (c *pieceCache) put(piece string, h, w0 uint64, n int) {
	if len(piece) > cacheKey {
		return
	}
	e := &c.e[h%cacheSize]
	s := e.seq.Load()
	if s&1 != 0 || !e.seq.CompareAndSwap(s, s+1) {
		return
	}
	w := keyWords(piece, w0)
	e.meta.Store(uint32(len(piece)) | uint32(n)<<8)
	for i := range w {
		e.key[i].Store(w[i])
	}
	e.seq.Store(s + 2)
}
