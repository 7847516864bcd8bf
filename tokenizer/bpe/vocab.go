package bpe

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"math/bits"
)

// The compact vocabularies written by internal/gen from the published rank
// files (their SHA-256 digests are pinned there): "BPEV1\n", a uint32 token
// count, then each token in rank order as a length byte and its bytes.
//
//go:generate go run ./internal/gen -out .
var (
	//go:embed o200k_base.bpe
	o200kData string
	//go:embed cl100k_base.bpe
	cl100kData string
)

// errBadVocab reports an embedded vocabulary that does not parse; it would
// mean a corrupt build, never bad input.
var errBadVocab = errors.New("bpe: embedded vocabulary is corrupt")

// noRank is the rank of a byte string that is not a token.
const noRank = ^uint32(0)

// vocab maps tokens to ranks. Token bytes stay in the embedded data:
// start holds each token's first byte, and its length byte sits just
// before it. The index is an open-addressing table whose slot holds a
// token's first 8 bytes, its length and its rank, so a lookup of up to 8
// bytes (most of them) reads one slot and nothing else.
type vocab struct {
	data  string
	start []uint32 // start[rank] is the token's first byte in data
	slots []slot
	mask  uint64
	// single[b] is the rank of the one-byte token b.
	single [256]uint32
	// pair[a<<8|b] is the rank of the two-byte token ab, or noRank.
	pair []uint32
	// short indexes the tokens of 3 and 4 bytes, most of the lookups of
	// a merge, in a table small enough to stay in the processor's cache:
	// each slot is the token's bytes | its length<<32 | (rank+1)<<35.
	short     []uint64
	shortMask uint64
	// bloom has two bits set for each token of 3 bytes or more (from
	// shortHash or hash), so that most strings that are not tokens, most
	// of a merge's lookups, are turned away without reading the larger
	// tables.
	bloom []uint64
}

// bloomBits is the size of vocab.bloom in bits: 256 KiB.
const bloomBits = 1 << 21

// bloomAt returns the word of vocab.bloom for hash h and the two bits it
// sets there: one memory read per test.
func bloomAt(h uint64) (uint64, uint64) {
	return (h >> 11) % (bloomBits / 64), 1<<((h>>40)%64) | 1<<((h>>46)%64)
}

func (v *vocab) bloomSet(h uint64) {
	i, m := bloomAt(h)
	v.bloom[i] |= m
}

// maybe reports whether a string of hash h may be a token.
func (v *vocab) maybe(h uint64) bool {
	i, m := bloomAt(h)
	return v.bloom[i]&m == m
}

type slot struct {
	key  uint64 // the token's first 8 bytes, little-endian, zero-padded
	rank uint32 // rank+1; 0 marks an empty slot
	n    uint32 // the token's length
}

func loadVocab(data string) (*vocab, error) {
	const magic = "BPEV1\n"
	if len(data) < len(magic)+4 || data[:len(magic)] != magic {
		return nil, errBadVocab
	}
	n := int(binary.LittleEndian.Uint32([]byte(data[len(magic) : len(magic)+4])))
	v := &vocab{data: data, start: make([]uint32, n), pair: make([]uint32, 1<<16)}
	size := 1 << bits.Len(uint(n*2))
	v.slots = make([]slot, size)
	v.mask = uint64(size - 1)
	v.bloom = make([]uint64, bloomBits/64)
	v.short = make([]uint64, 1<<17)
	v.shortMask = 1<<17 - 1
	for i := range v.pair {
		v.pair[i] = noRank
	}
	bytesSeen := 0 // every byte must be a token
	var seen [256]bool
	off := len(magic) + 4
	for r := range n {
		if off >= len(data) {
			return nil, errBadVocab
		}
		l := int(data[off])
		off++
		if l == 0 || off+l > len(data) {
			return nil, errBadVocab
		}
		v.start[r] = uint32(off)
		tok := data[off : off+l]
		switch l {
		case 1:
			if !seen[tok[0]] {
				seen[tok[0]] = true
				bytesSeen++
			}
			v.single[tok[0]] = uint32(r)
		case 2:
			v.pair[int(tok[0])<<8|int(tok[1])] = uint32(r)
		case 3, 4:
			k := shortKey(tok)
			v.bloomSet(shortMix(k))
			for i := shortHash(k) & v.shortMask; ; i = (i + 1) & v.shortMask {
				if v.short[i] == 0 {
					v.short[i] = k | uint64(r+1)<<35
					break
				}
			}
		}
		h := hash(tok)
		if l > 4 {
			v.bloomSet(h)
		}
		for i := h & v.mask; ; i = (i + 1) & v.mask {
			if v.slots[i].rank == 0 {
				v.slots[i] = slot{key: pack(tok), rank: uint32(r + 1), n: uint32(l)}
				break
			}
		}
		off += l
	}
	if off != len(data) || bytesSeen != 256 {
		return nil, errBadVocab
	}
	return v, nil
}

// pack returns the first 8 bytes of s as a little-endian number, zero-padded.
func pack(s string) uint64 {
	if len(s) >= 8 {
		return le64(s)
	}
	var x uint64
	for i := len(s) - 1; i >= 0; i-- {
		x = x<<8 | uint64(s[i])
	}
	return x
}

// hash mixes s's bytes and length. It need not resist crafted input: the
// table holds only the vocabulary, so its probe sequences are fixed.
func hash(s string) uint64 { return hashW(s, pack(s)) }

// hashW is hash with pack(s) already computed, w.
func hashW(s string, w uint64) uint64 {
	h := uint64(len(s)) * 0x9e3779b97f4a7c15
	if len(s) > 8 {
		for {
			h = (h ^ w) * 0xbf58476d1ce4e5b9
			h ^= h >> 29
			s = s[8:]
			w = pack(s)
			if len(s) <= 8 {
				break
			}
		}
	}
	h = (h ^ w) * 0x94d049bb133111eb
	return h ^ h>>32
}

// packAt is pack(text[p:q]), reading 8 bytes at once where text has them.
func packAt(text string, p, q int) uint64 {
	if len(text)-p < 8 {
		return pack(text[p:q])
	}
	w := le64(text[p:])
	if n := q - p; n < 8 {
		w &= 1<<(8*n) - 1
	}
	return w
}

// token returns the bytes of the token of rank r.
func (v *vocab) token(r uint32) string {
	s := v.start[r]
	return v.data[s : s+uint32(v.data[s-1])]
}

// shortKey is the key of a string of 3 or 4 bytes in vocab.short.
func shortKey(s string) uint64 { return pack(s) | uint64(len(s))<<32 }

func shortHash(k uint64) uint64 { return shortMix(k) >> 40 }

func shortMix(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 }

// rank returns the rank of s, or noRank if s is not a token.
func (v *vocab) rank(s string) uint32 {
	switch len(s) {
	case 1:
		return v.single[s[0]]
	case 2:
		return v.pair[int(s[0])<<8|int(s[1])]
	case 3, 4:
		return v.rankShort(s)
	}
	k := pack(s)
	h := hashW(s, k)
	if !v.maybe(h) {
		return noRank
	}
	return v.rankHash(s, h, k)
}

// rankOf is rank with s's hash h and first word k (pack) already
// computed.
func (v *vocab) rankOf(s string, h, k uint64) uint32 {
	switch len(s) {
	case 2:
		return v.pair[int(s[0])<<8|int(s[1])]
	case 3, 4:
		return v.rankShort(s)
	}
	if !v.maybe(h) {
		return noRank
	}
	return v.rankHash(s, h, k)
}

func (v *vocab) rankShort(s string) uint32 {
	k := shortKey(s)
	m := shortMix(k)
	if !v.maybe(m) {
		return noRank
	}
	for i := (m >> 40) & v.shortMask; ; i = (i + 1) & v.shortMask {
		e := v.short[i]
		if e == 0 {
			return noRank
		}
		if e&(1<<35-1) == k {
			return uint32(e>>35) - 1
		}
	}
}

// rankHash looks s up in the index, given its hash h and first word k.
func (v *vocab) rankHash(s string, h, k uint64) uint32 {
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		e := &v.slots[i]
		if e.rank == 0 {
			return noRank
		}
		if e.key == k && int(e.n) == len(s) {
			r := e.rank - 1
			if len(s) <= 8 {
				return r
			}
			st := v.start[r]
			if v.data[st+8:st+e.n] == s[8:] {
				return r
			}
		}
	}
}

// le64 returns the first 8 bytes of s, which has at least 8, as a
// little-endian number (the compiler makes one load of it).
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
