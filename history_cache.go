package hybridctx

import "hash/maphash"

// textKey identifies a text a Compactor saw without holding it: a
// conversation's texts stay the caller's to free. Two seeded 64-bit hashes
// and the length: a notice's verdict is trusted on it, so a collision must
// be out of reach, not only unlikely.
type textKey struct {
	h1, h2 uint64
	n      int
}

// key returns text's key.
func (c *Compactor) key(text string) textKey {
	return textKey{maphash.String(c.seeds[0], text), maphash.String(c.seeds[1], text), len(text)}
}

// minTextCache is the fewest texts a Compactor remembers; it remembers
// more for a longer history (textCache.fit).
const minTextCache = 8192

// textFacts is what a Compactor remembers of one text: its token count
// (-1 when not counted) and, for a text that reads like a notice, what it
// is.
type textFacts struct {
	tokens  int64
	verdict noticeVerdict
	mask    string // the notice's mask, for verdictNotice
}

// textCache is a least-recently-used map of texts' facts. A history is
// weighed before every model call and most of it is the same from one call
// to the next; sized to hold every text of the longest history weighed
// (its results and their masks) twice over, each call finds the texts of
// the previous one. Not safe for concurrent use (the Compactor locks it).
type textCache struct {
	index      map[textKey]int32
	ents       []cacheEntry
	head, tail int32 // most and least recently used; -1 when empty
	limit      int
}

type cacheEntry struct {
	key        textKey
	prev, next int32
	facts      textFacts
}

// fit makes room for a history of n results: each call weighs a text per
// result and, when it steps, a mask per result; the cache keeps the texts
// of two calls.
func (tc *textCache) fit(n int) {
	tc.limit = max(tc.limit, minTextCache, 4*n)
}

// get returns the facts of k, now the most recently used, or nil.
func (tc *textCache) get(k textKey) *textFacts {
	i, ok := tc.index[k]
	if !ok {
		return nil
	}
	tc.touch(i)
	return &tc.ents[i].facts
}

// put returns the facts of k, added (tokens -1, verdict unknown) when
// absent, evicting the least recently used entry when full.
func (tc *textCache) put(k textKey) *textFacts {
	if f := tc.get(k); f != nil {
		return f
	}
	if tc.index == nil {
		tc.index = map[textKey]int32{}
		tc.head, tc.tail = -1, -1
	}
	tc.limit = max(tc.limit, minTextCache)
	var i int32
	if len(tc.ents) < tc.limit {
		i = int32(len(tc.ents))
		tc.ents = append(tc.ents, cacheEntry{})
	} else {
		i = tc.tail
		tc.unlink(i)
		delete(tc.index, tc.ents[i].key)
	}
	tc.ents[i] = cacheEntry{key: k, prev: -1, next: -1, facts: textFacts{tokens: -1}}
	tc.index[k] = i
	tc.pushFront(i)
	return &tc.ents[i].facts
}

func (tc *textCache) touch(i int32) {
	if tc.head == i {
		return
	}
	tc.unlink(i)
	tc.pushFront(i)
}

func (tc *textCache) unlink(i int32) {
	e := &tc.ents[i]
	if e.prev >= 0 {
		tc.ents[e.prev].next = e.next
	} else {
		tc.head = e.next
	}
	if e.next >= 0 {
		tc.ents[e.next].prev = e.prev
	} else {
		tc.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (tc *textCache) pushFront(i int32) {
	e := &tc.ents[i]
	e.prev, e.next = -1, tc.head
	if tc.head >= 0 {
		tc.ents[tc.head].prev = i
	}
	tc.head = i
	if tc.tail < 0 {
		tc.tail = i
	}
}
