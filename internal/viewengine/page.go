package viewengine

import "strconv"

// pager builds a paged answer (search, query): items are offered in order
// and kept while they fit the budget; the summary line that ends the answer
// counts every item seen and says how to continue. The whole answer is at
// most the budget; it keeps at most the budget.
type pager struct {
	budget   int64
	noun     string // "matches", "results"
	total    int64  // every item counted (shown or not)
	buf      []byte
	ends     []int // end of each kept item in buf
	firstLen int   // length of the first item offered (-1 none)
	offered  bool
	full     bool // an item did not fit: no more are kept
}

// offer keeps item when it fits; once one does not, none is kept any more.
func (p *pager) offer(item []byte) {
	if p.full {
		return
	}
	if !p.offered {
		p.offered, p.firstLen = true, len(item)
	}
	if int64(len(p.buf)+len(item)) > p.budget {
		p.full = true
		return
	}
	p.buf = append(p.buf, item...)
	p.ends = append(p.ends, len(p.buf))
}

// tooLarge is offer for an item known to be longer than the budget, of at
// least n bytes, which is never encoded whole.
func (p *pager) tooLarge(n int) {
	if p.full {
		return
	}
	if !p.offered {
		p.offered, p.firstLen = true, n
	}
	p.full = true
}

// summary renders the summary line: its count (counts), plus how to
// continue when items remain after the last shown.
func (p *pager) summary(skip int64, shown int) []byte {
	s := p.counts(skip, shown)
	if last := skip + int64(shown); shown > 0 && last < p.total {
		s = append(s, "; continue with skip "...)
		s = strconv.AppendInt(s, last, 10)
	}
	return append(s, '\n')
}

// singular is the noun of a count of one.
var singular = map[string]string{"matches": "match", "results": "result"}

// counts renders "<M> <noun> (showing <a>-<b>)" or "(showing none)", the
// noun singular when M is 1.
func (p *pager) counts(skip int64, shown int) []byte {
	s := strconv.AppendInt(nil, p.total, 10)
	s = append(s, ' ')
	if one, ok := singular[p.noun]; ok && p.total == 1 {
		s = append(s, one...)
	} else {
		s = append(s, p.noun...)
	}
	if shown == 0 {
		s = append(s, " (showing none)"...)
	} else {
		last := skip + int64(shown)
		s = append(s, " (showing "...)
		s = strconv.AppendInt(s, skip+1, 10)
		s = append(s, '-')
		s = strconv.AppendInt(s, last, 10)
		s = append(s, ')')
	}
	return s
}

// answer ends the page: it drops the last items until the summary fits,
// and refuses (over_budget) only when not even the first item would fit.
func (p *pager) answer(skip int64) Answer {
	shown := len(p.ends)
	sum := p.summary(skip, shown)
	for shown > 0 && int64(p.ends[shown-1]+len(sum)) > p.budget {
		shown--
		sum = p.summary(skip, shown)
	}
	page := Page{Total: p.total, First: skip + 1, Count: int64(shown)}
	if end := skip + int64(shown); end < p.total && (shown > 0 || p.offered) {
		page.Next = end
	}
	if shown == 0 && (p.offered || int64(len(sum)) > p.budget) {
		smallest := int64(len(sum))
		if p.offered {
			smallest = int64(p.firstLen + len(p.summary(skip, 1)))
		}
		page.Next = 0
		return Answer{Outcome: OverBudget, Observed: smallest, Page: page}
	}
	body := p.buf[:0]
	if shown > 0 {
		body = p.buf[:p.ends[shown-1]]
	}
	page.ItemBytes, page.Summary = int64(len(body)), string(p.counts(skip, shown))
	body = append(body, sum...)
	return Answer{Outcome: Resolved, Body: body, Observed: int64(len(body)), Page: page}
}
