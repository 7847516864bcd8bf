package bpe

// Byte-pair merges: a piece that is not itself a token starts as its bytes
// and repeatedly merges the adjacent pair whose concatenation has the
// lowest rank (the leftmost of equal ranks) until no pair is a token. The
// count is the number of parts left. A short piece scans its pairs for the
// lowest rank (quadratic in a length of at most smallPiece); a longer one
// keeps its pairs in a heap over a linked list, O(n log n).

// smallPiece is the longest piece merged by scanning.
const smallPiece = 64

// mergeSmall counts the parts of a piece of 2 to smallPiece bytes.
func (v *vocab) mergeSmall(piece string) int {
	var pos [smallPiece + 1]uint8
	var rank [smallPiece]uint32
	n := len(piece)
	for i := 0; i <= n; i++ {
		pos[i] = uint8(i)
	}
	for i := 0; i < n-1; i++ {
		rank[i] = v.rank(piece[i : i+2])
	}
	m := n + 1 // boundaries; parts are m-1
	for m > 2 {
		best, at := noRank, -1
		for i := 0; i < m-2; i++ {
			if rank[i] < best {
				best, at = rank[i], i
			}
		}
		if at < 0 {
			break
		}
		// Merge parts at and at+1: drop boundary at+1.
		copy(pos[at+1:m-1], pos[at+2:m])
		copy(rank[at+1:m-2], rank[at+2:m-1])
		m--
		if at+2 < m {
			rank[at] = v.rank(piece[pos[at]:pos[at+2]])
		} else {
			rank[at] = noRank
		}
		if at > 0 {
			rank[at-1] = v.rank(piece[pos[at-1]:pos[at+1]])
		}
	}
	return m - 1
}

// scratch is the reusable state of mergeLarge.
type scratch struct {
	prev, next []int32
	rank       []uint32
	heap       []cand
	buf        []byte // text with invalid UTF-8 replaced
}

// cand is a pair in the heap: the pair starting at part pos of rank rank.
type cand struct {
	rank uint32
	pos  int32
}

// maxPooled is the longest piece whose scratch goes back to the pool, so
// that one huge piece does not keep its memory alive.
const maxPooled = 1 << 20

// mergeLarge counts the parts of a piece of any length.
func (v *vocab) mergeLarge(piece string, s *scratch) int {
	n := len(piece)
	if cap(s.next) < n+1 {
		s.prev = make([]int32, n+1)
		s.next = make([]int32, n+1)
		s.rank = make([]uint32, n+1)
		s.heap = make([]cand, 0, n)
	}
	prev, next, rank := s.prev[:n+1], s.next[:n+1], s.rank[:n+1]
	h := s.heap[:0]
	for i := range n + 1 {
		prev[i], next[i], rank[i] = int32(i-1), int32(i+1), noRank
	}
	for i := 0; i+2 <= n; i++ {
		if r := v.rank(piece[i : i+2]); r != noRank {
			rank[i] = r
			h = append(h, cand{r, int32(i)})
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(h, i)
	}
	parts := n
	rankOf := func(b int32) uint32 {
		j := next[b]
		if int(j) >= n {
			return noRank
		}
		return v.rank(piece[b:next[j]])
	}
	for len(h) > 0 {
		top := h[0]
		last := len(h) - 1
		h[0] = h[last]
		h = h[:last]
		down(h, 0)
		i := top.pos
		if rank[i] != top.rank {
			continue // stale: the pair changed since it was pushed
		}
		j := next[i]
		k := next[j]
		rank[j] = noRank
		next[i] = k
		prev[k] = i
		parts--
		for _, b := range [2]int32{i, prev[i]} {
			if b < 0 {
				continue
			}
			r := rankOf(b)
			rank[b] = r
			if r != noRank {
				h = append(h, cand{r, b})
				up(h, len(h)-1)
			}
		}
	}
	s.heap = h[:0]
	return parts
}

func less(a, b cand) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

func up(h []cand, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func down(h []cand, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && less(h[r], h[c]) {
			c = r
		}
		if !less(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
